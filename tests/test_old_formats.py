"""Files of a format only a development version before the first release wrote: each is one
line that says what it is and the command that regenerates it, never a crash. The one
exception, a snapshot of fingerprint scheme 1 (always format 1), is still migrated."""

from __future__ import annotations

import json

from pytest_workload import SessionReport
from pytest_workload.__main__ import main
from tests.file_faults import GATE, UPDATE, no_traceback, stored
from tests.pytester_suite import lit, two_shapes

PERF = ("--workload-snapshot", "--workload-perf=strict", "-p", "no:xdist")


def test_an_old_snapshot_format_is_one_line_and_regenerated_by_update(pytester, suite):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    current = stored(pytester).read_text()
    stored(pytester).write_text(
        current.replace('"pytest_workload_snapshot": 4', '"pytest_workload_snapshot": 3')
    )
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*workload snapshot __workload_snapshots__*test_two_shapes.workloads is of snapshot "
            "format 3, which only a development version before the first release wrote (this "
            "release reads format 4); regenerate it with "
            "`pytest --workload-snapshot --snapshot-update`"
        )
    )
    no_traceback(result)
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    assert stored(pytester).read_text() == current


def test_an_old_report_is_one_line(tmp_path, capsys):
    data = SessionReport(scheme=2, tests=()).to_dict()
    current, old = tmp_path / "head.json", tmp_path / "base.json"
    current.write_text(json.dumps(data))
    old.write_text(json.dumps({**data, "schema_version": 3}))
    assert main(["compare", str(old), str(current)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"error: {old}: is of report schema_version 3, which only a development version before "
        "the first release wrote (this release reads 4); regenerate it with "
        f"`pytest --workload-json={old}`"
    )


def test_an_old_baseline_format_is_one_line_and_rewritten_by_update(pytester, suite, injected):
    # (the other shape is judged against its current baseline: timed by the injected stopwatch)
    suite(two_shapes())
    pytester.runpytest(*PERF, "--snapshot-update").assert_outcomes(passed=1)
    path = sorted((pytester.path / "__workload_baselines__").rglob("*.json"))[0]
    path.write_text(
        path.read_text().replace('"pytest_workload_baseline": 3', '"pytest_workload_baseline": 2')
    )
    result = pytester.runpytest(*PERF)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*timing baseline *.json: is of baseline format 2, which only a development "
            "version before the first release wrote (this release reads format 3); rewrite it "
            "with `pytest --workload-snapshot --snapshot-update -p no:xdist`*"
        )
    )
    no_traceback(result)
    pytester.runpytest(*PERF, "--snapshot-update").assert_outcomes(passed=1)
    assert json.loads(path.read_text())["pytest_workload_baseline"] == 3


SCHEME_1 = """
import pytest
from pytest_workload.plugin import SESSION_KEY
from pytest_workload._fingerprint.scheme import SCHEME_1


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    config.stash[SESSION_KEY].scheme = SCHEME_1
"""


def test_a_scheme_1_snapshot_in_format_1_is_still_named_and_migrated(pytester, suite):
    pytester.makeconftest(SCHEME_1)
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    pytester.makeconftest("")
    data = json.loads(stored(pytester).read_text())
    assert data["fingerprint_scheme"] == 1
    # as scheme 1 wrote it: format 1, no library versions, module descriptions, paths or costs
    data["pytest_workload_snapshot"] = 1
    del data["libraries"], data["modules"]
    for entry in data["workloads"]:
        del entry["paths"], entry["costs"]
    stored(pytester).write_text(json.dumps(data, indent=2))

    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*written by fingerprint scheme 1; this run uses scheme 2. Migrate it with "
            "`pytest --workload-snapshot --snapshot-update --workload-migrate`*"
        )
    )
    migrated = pytester.runpytest(*UPDATE, "--workload-migrate")
    migrated.assert_outcomes(passed=1)
    migrated.stdout.fnmatch_lines(
        lit("*: migrated *test_two_shapes.workloads from fingerprint scheme 1 to 2")
    )
    after = json.loads(stored(pytester).read_text())
    assert after["pytest_workload_snapshot"] == 4 and after["fingerprint_scheme"] == 2
    pytester.runpytest(*GATE).assert_outcomes(passed=1)
