"""Every hint names a command that acts on what this run recorded: the flags that chose it
come along (end-to-end runs)."""

from __future__ import annotations

import pytest

from tests.pytester_suite import MODELS, SUITE_INI

UNMARKED = (
    MODELS
    + """

def test_unmarked():
    Net().eval()(torch.rand(1, 3, 8, 8))
"""
)

ALL = ("--workload-record=all",)


@pytest.fixture
def unmarked(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_unmarked=UNMARKED)
    return pytester


def _snapshots(pytester):
    return list(pytester.path.rglob("*.workloads"))


def test_the_accept_hint_repeats_record_all(unmarked):
    result = unmarked.runpytest("--workload-snapshot", *ALL)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "no workload snapshot * for the recorded workloads; run `pytest --workload-snapshot "
            "--snapshot-update --workload-record=all` to accept the recorded workloads"
        ]
    )
    # and the command it names accepts them
    unmarked.runpytest("--workload-snapshot", "--snapshot-update", *ALL).assert_outcomes(passed=1)
    unmarked.runpytest("--workload-snapshot", *ALL).assert_outcomes(passed=1)


def test_an_update_without_the_gate_says_it_wrote_nothing_and_what_to_run(unmarked):
    result = unmarked.runpytest("--snapshot-update", *ALL)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "--snapshot-update wrote no workload snapshot: they are written only with "
            "--workload-snapshot; run `pytest --workload-snapshot --snapshot-update "
            "--workload-record=all`"
        ]
    )
    assert _snapshots(unmarked) == []


def test_an_update_that_recorded_nothing_says_so(unmarked):
    """The issue: without the project's --workload-record=all it passed, wrote nothing, and
    said nothing."""
    result = unmarked.runpytest("--workload-snapshot", "--snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["--snapshot-update wrote no workload snapshot: no test recorded workloads (*"]
    )
    assert _snapshots(unmarked) == []


def test_the_baseline_hint_repeats_the_flags_and_runs_in_one_process(unmarked, tmp_path):
    # (a test recorded only by --workload-record=all is never replayed, so it gets no baseline:
    # this one is marked, and the run still records every test)
    unmarked.makepyfile(
        test_unmarked=UNMARKED.replace("def test_", "@pytest.mark.workloads\ndef test_")
    )
    where = f"--workload-baselines={tmp_path / 'b'}"
    args = ("--workload-snapshot", "-o", "workload_perf=on", *ALL, where)
    unmarked.runpytest(*args, "--snapshot-update", "-o", "workload_perf=off")
    result = unmarked.runpytest(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "1 workload without a timing baseline: record it with `pytest "
            "--workload-snapshot --snapshot-update -o workload_perf=on --workload-record=all "
            f"{where} -p no:xdist`"
        ]
    )
