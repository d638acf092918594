"""Every kind of hint the plugin prints is a command: run literally (parsed from the output),
then the plain command, it leaves the outcome it promised (end-to-end runs; timings from the
injected stopwatch, so no outcome depends on this machine).

The project has two directories; the user's command runs one, and ``-k`` leaves out one of its
tests, which fails: a hint that dropped the path or ``-k`` would run it, and fail.

Each hint printed under xdist (by a worker, or by the controller from what workers sent) is
run literally too: those of the snapshot gate, and those of the timing gate, which xdist workers
judge for a model they never replay (one that writes outside itself) and, under
``--workload-perf=strict``, for every model. Their timings are real; a test asserts only what
no machine's load decides."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.pytester_suite import MODELS

SUB = (
    MODELS
    + """

@pytest.mark.workloads
def test_net():
    Net(KERNEL).eval()(torch.rand(1, 3, 8, 8))


def test_broken():
    assert False, "left out by -k"
"""
)

#: The user's plain command (after ``pytest``).
PLAIN = ("sub", "-k", "not broken", "--workload-snapshot")

#: A backticked command in a line of output.
_COMMAND = re.compile(r"`(pytest [^`]*)`")


@pytest.fixture
def project(pytester, injected):
    pytester.makeini("[pytest]\nworkload_time_budget = 0.01\n")
    (pytester.path / "sub").mkdir()
    (pytester.path / "other").mkdir()
    (pytester.path / "other" / "test_other.py").write_text("def test_other():\n    assert False\n")

    def write(kernel=3):
        (pytester.path / "sub" / "test_sub.py").write_text(
            SUB.replace("import torch\n", f"import torch\nKERNEL = {kernel}\n", 1)
        )

    write()
    return write


def follow(pytester, result, text):
    """Run the command printed after ``text`` (the first line that has it), literally, in
    this process (where the ``injected`` stopwatch times it)."""
    for line in result.outlines + result.errlines:
        if text in line and (found := _COMMAND.search(line)):
            words = shlex.split(found[1])
            assert words[0] == "pytest" and words[1:3] == ["sub", "--workload-snapshot"]
            return pytester.runpytest(*words[1:])
    raise AssertionError(f"no hint {text!r} in the output:\n{result.stdout}")


def accepted(pytester):
    pytester.runpytest(*PLAIN, "--snapshot-update", "-p", "no:xdist").assert_outcomes(passed=1)


def test_no_snapshot_hint_accepts(pytester, project):
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(failed=1, deselected=1)
    follow(pytester, result, "to accept the recorded workloads").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def test_changed_workload_hint_accepts(pytester, project):
    accepted(pytester)
    project(kernel=5)
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(failed=1, deselected=1)
    assert "workload snapshot mismatch" in result.stdout.str()
    follow(pytester, result, "to accept the recorded workloads").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def test_corrupt_snapshot_hint_regenerates_it(pytester, project):
    accepted(pytester)
    (snapshot,) = pytester.path.rglob("*.workloads")
    snapshot.write_text("{not a table")
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(failed=1, deselected=1)
    follow(pytester, result, "regenerate it with").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def test_update_without_the_gate_hint_writes_the_snapshots(pytester, project):
    result = pytester.runpytest("sub", "-k", "not broken", "--snapshot-update")
    result.assert_outcomes(passed=1, deselected=1)
    follow(pytester, result, "--snapshot-update wrote no workload snapshot").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def test_missing_baseline_hint_records_it(pytester, project):
    accepted(pytester)
    for baseline in (pytester.path / "__workload_baselines__").rglob("*.json"):
        baseline.unlink()
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(passed=1, deselected=1)
    follow(pytester, result, "without a timing baseline: record it with")
    again = pytester.runpytest(*PLAIN)
    again.assert_outcomes(passed=1, deselected=1)
    assert "without a timing baseline" not in again.stdout.str()


def test_regression_hint_accepts_the_new_timing(pytester, project, injected):
    accepted(pytester)
    injected(0.03)
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(failed=1, deselected=1)
    follow(pytester, result, "accept the new timing with").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def test_faster_hint_refreshes_the_baseline(pytester, project, injected):
    injected(0.03)
    accepted(pytester)
    injected(0.01)
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(passed=1, deselected=1)
    follow(pytester, result, "faster than its baseline: refresh it with")
    again = pytester.runpytest(*PLAIN)
    again.assert_outcomes(passed=1, deselected=1)
    assert "faster than its baseline" not in again.stdout.str()


def test_kernel_hint_refreshes_the_baseline(pytester, project, injected):
    accepted(pytester)
    injected(0.003, kernel=0.00001)
    result = pytester.runpytest(*PLAIN, "--workload-json=notes.json")
    result.assert_outcomes(passed=1, deselected=1)
    assert "1 timing not judged: the calibration kernel" in result.stdout.str()
    notes = (pytester.path / "notes.json").read_text()
    command = _COMMAND.search(notes[notes.index("refresh the baseline with") :])
    assert command is not None
    pytester.runpytest(*shlex.split(command[1])[1:]).assert_outcomes(passed=1, deselected=1)
    again = pytester.runpytest(*PLAIN)
    again.assert_outcomes(passed=1, deselected=1)
    assert "not judged" not in again.stdout.str()


def test_corrupt_baseline_hint_rewrites_it(pytester, project):
    accepted(pytester)
    (baseline,) = (pytester.path / "__workload_baselines__").rglob("*.json")
    baseline.write_text("{not json")
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(failed=1, deselected=1)
    follow(pytester, result, "or rewrite it with").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def test_old_baseline_format_hint_rewrites_it(pytester, project):
    accepted(pytester)
    (baseline,) = (pytester.path / "__workload_baselines__").rglob("*.json")
    baseline.write_text(
        baseline.read_text().replace(
            '"pytest_workload_baseline": 1', '"pytest_workload_baseline": 0'
        )
    )
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(failed=1, deselected=1)
    follow(pytester, result, "; rewrite it with").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def _add_attribute(pytester):
    """An attribute that no computation reads, as a library release may add one."""
    test = pytester.path / "sub" / "test_sub.py"
    head = "        self.head = nn.Linear(4, 2)\n"
    test.write_text(test.read_text().replace(head, head + "        self.stem.variant = 'b'\n"))


def test_library_upgrade_hint_accepts_a_new_attribute(pytester, project):
    accepted(pytester)
    _add_attribute(pytester)
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(failed=1, deselected=1)
    follow(pytester, result, "attributes or class paths changed").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def test_accept_upgrade_without_update_hint_accepts_it(pytester, project):
    accepted(pytester)
    _add_attribute(pytester)
    result = pytester.runpytest(*PLAIN, "--workload-accept-upgrade")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    follow(pytester, result, "--workload-accept-upgrade needs --snapshot-update").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def test_refused_upgrade_hint_accepts_the_change(pytester, project):
    accepted(pytester)
    project(kernel=5)  # more than an upgrade's wording: refused
    result = pytester.runpytest(*PLAIN, "--snapshot-update", "--workload-accept-upgrade")
    result.assert_outcomes(failed=1, deselected=1)
    follow(pytester, result, "review the change, then accept it with").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


def test_a_hint_from_an_xdist_worker_keeps_the_paths_and_k(pytester, project):
    """A failure message is written on the worker that ran the test, from its own config."""
    result = pytester.runpytest_subprocess(*PLAIN, "-n", "2")
    result.assert_outcomes(failed=1)
    follow(pytester, result, "to accept the recorded workloads").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest(*PLAIN).assert_outcomes(passed=1, deselected=1)


#: The injected stopwatch takes no time, and a real timing some: a budget of 1 ns cuts every
#: timing short, after its first sample.
CUT_SHORT = "--workload-time-budget=1e-9"


@pytest.mark.parametrize("run", ["serial", "n2"])
def test_cut_short_hint_raises_the_time_budget(pytester, project, injected, run):
    accepted(pytester)
    for baseline in (pytester.path / "__workload_baselines__").rglob("*.json"):
        baseline.unlink()
    if run == "serial":
        injected(1.0)  # each call takes a second: a budget of 2 s has room for 8, twice over
        result = pytester.runpytest(*PLAIN, CUT_SHORT)
    else:  # (xdist workers judge timings only under strict)
        result = pytester.runpytest_subprocess(
            *PLAIN, CUT_SHORT, "-n", "2", "--workload-perf=strict"
        )
    result.assert_outcomes(passed=1)
    # the record hint would write no baseline: the update's timing is cut short too
    assert "record it with `" not in result.stdout.str()
    if run == "serial":
        assert "--workload-time-budget=2 -k 'not broken' -p no:xdist`" in result.stdout.str()
    followed = follow(pytester, result, "its timing cut short by the time budget: record it")
    followed.assert_outcomes(passed=1, deselected=1)
    assert "not written" not in followed.stdout.str()
    for args in ((*PLAIN, CUT_SHORT), PLAIN):
        again = pytester.runpytest(*args)
        again.assert_outcomes(passed=1, deselected=1)
        assert "without a timing baseline" not in again.stdout.str()


def test_an_update_cut_short_says_to_raise_the_time_budget(pytester, project, injected):
    injected(1.0)
    update = (*PLAIN, "--snapshot-update", "-p", "no:xdist")
    result = pytester.runpytest(*update, CUT_SHORT)
    result.assert_outcomes(passed=1, deselected=1)
    assert not (pytester.path / "__workload_baselines__").exists()
    followed = follow(pytester, result, "the time budget cut its timing short; write it")
    followed.assert_outcomes(passed=1, deselected=1)
    again = pytester.runpytest(*PLAIN)
    again.assert_outcomes(passed=1, deselected=1)
    assert "without a timing baseline" not in again.stdout.str()


def test_changed_workload_hint_from_an_xdist_worker_accepts(pytester, project):
    accepted(pytester)
    project(kernel=5)
    result = pytester.runpytest_subprocess(*PLAIN, "-n", "2")
    result.assert_outcomes(failed=1)
    assert "workload snapshot mismatch" in result.stdout.str()
    follow(pytester, result, "to accept the recorded workloads").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest_subprocess(*PLAIN, "-n", "2").assert_outcomes(passed=1)


def test_corrupt_snapshot_hint_from_an_xdist_worker_regenerates_it(pytester, project):
    accepted(pytester)
    (snapshot,) = pytester.path.rglob("*.workloads")
    snapshot.write_text("{not a table")
    result = pytester.runpytest_subprocess(*PLAIN, "-n", "2")
    result.assert_outcomes(failed=1)
    follow(pytester, result, "regenerate it with").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest_subprocess(*PLAIN, "-n", "2").assert_outcomes(passed=1)


def test_update_without_the_gate_hint_under_xdist_writes_the_snapshots(pytester, project):
    result = pytester.runpytest_subprocess(
        "sub", "-k", "not broken", "--snapshot-update", "-n", "2"
    )
    result.assert_outcomes(passed=1)
    follow(pytester, result, "--snapshot-update wrote no workload snapshot").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest_subprocess(*PLAIN, "-n", "2").assert_outcomes(passed=1)


def test_library_upgrade_hint_from_an_xdist_worker_accepts_it(pytester, project):
    accepted(pytester)
    _add_attribute(pytester)
    result = pytester.runpytest_subprocess(*PLAIN, "-n", "2")
    result.assert_outcomes(failed=1)
    follow(pytester, result, "attributes or class paths changed").assert_outcomes(
        passed=1, deselected=1
    )
    pytester.runpytest_subprocess(*PLAIN, "-n", "2").assert_outcomes(passed=1)


def test_missing_baseline_hint_from_xdist_workers_records_it(pytester, project):
    accepted(pytester)
    for baseline in (pytester.path / "__workload_baselines__").rglob("*.json"):
        baseline.unlink()
    strict = (*PLAIN, "--workload-perf=strict")  # (xdist workers judge timings only so)
    result = pytester.runpytest_subprocess(*strict, "-n", "2")
    result.assert_outcomes(passed=1)
    follow(pytester, result, "without a timing baseline: record it with")
    again = pytester.runpytest(*strict)
    again.assert_outcomes(passed=1, deselected=1)
    assert "without a timing baseline" not in again.stdout.str()


#: A model that writes outside itself: never replayed, timed from its test's own calls (the
#: first two are traced, so nine leave seven samples), also by xdist workers, whose gate judges
#: such timings (and, relaxed, fails none).
OBSERVED = """
import pytest
import torch
from torch import nn

SEEN = torch.zeros(1)


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        SEEN.add_(1)
        return self.lin(x)


@pytest.mark.workloads
def test_counting():
    model = Counting()
    for _ in range(9):
        model(torch.rand(1, 4))


def test_broken():
    assert False, "left out by -k"
"""

N2 = ("-n", "2")


@pytest.fixture
def observed(pytester, project):
    (pytester.path / "sub" / "test_sub.py").write_text(OBSERVED)


def _baseline(pytester):
    (path,) = (pytester.path / "__workload_baselines__").rglob("*.json")
    return path


def _stored_median(pytester, median_s):
    """Make the stored baseline's timing ``median_s`` exactly, whatever this machine timed."""
    stored = json.loads(_baseline(pytester).read_text())
    stored["timing"].update(median_s=median_s, iqr_s=0.0, ci95_s=[median_s, median_s])
    _baseline(pytester).write_text(json.dumps(stored))


def test_baseline_not_written_under_xdist_hint_writes_it(pytester, observed):
    result = pytester.runpytest_subprocess(*PLAIN, "--snapshot-update", *N2)
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "__workload_baselines__").exists()
    follow(pytester, result, "timing baseline not written: timed while xdist").assert_outcomes(
        passed=1, deselected=1
    )
    assert _baseline(pytester).exists()
    again = pytester.runpytest_subprocess(*PLAIN, *N2)
    again.assert_outcomes(passed=1)
    assert "without a timing baseline" not in again.stdout.str()


def test_missing_baseline_hint_from_a_relaxed_xdist_gate_records_it(pytester, observed):
    accepted(pytester)
    _baseline(pytester).unlink()
    result = pytester.runpytest_subprocess(*PLAIN, *N2)
    result.assert_outcomes(passed=1)
    follow(pytester, result, "without a timing baseline: record it with")
    again = pytester.runpytest_subprocess(*PLAIN, *N2)
    again.assert_outcomes(passed=1)
    assert "without a timing baseline" not in again.stdout.str()


def test_regression_not_failed_under_xdist_hint_judges_it(pytester, observed):
    accepted(pytester)
    _stored_median(pytester, 1e-9)  # any real call is a regression against it
    result = pytester.runpytest_subprocess(*PLAIN, *N2)
    result.assert_outcomes(passed=1)
    judged = follow(pytester, result, "1 regression not failed")
    judged.assert_outcomes(failed=1, deselected=1)
    assert "performance regression" in judged.stdout.str()
    pytester.runpytest_subprocess(*PLAIN, *N2).stdout.fnmatch_lines(["1 regression not failed*"])


@pytest.mark.parametrize("gate", ["relaxed", "strict"])
def test_regression_and_faster_hints_from_xdist_workers_refresh_the_baseline(
    pytester, observed, gate
):
    accepted(pytester)
    strict = ("--workload-perf=strict",) if gate == "strict" else ()
    # strict fails a regression on the worker; the relaxed gate notes a faster workload
    _stored_median(pytester, 1e-9 if strict else 1000.0)
    result = pytester.runpytest_subprocess(*PLAIN, *N2, *strict)
    if strict:
        result.assert_outcomes(failed=1)
        hint = "accept the new timing with"
    else:
        result.assert_outcomes(passed=1)
        hint = "faster than its baseline: refresh it with"
    follow(pytester, result, hint).assert_outcomes(passed=1, deselected=1)
    median = json.loads(_baseline(pytester).read_text())["timing"]["median_s"]
    assert 1e-9 < median < 1000.0  # this machine's timing, whichever it was
    # (the next run judges against this machine's own timing, whose verdict its load decides)
    pytester.runpytest_subprocess(*PLAIN, *N2, *strict, "--workload-json=r.json")
    notes = json.loads((pytester.path / "r.json").read_text())["notes"]
    assert not [n for n in notes if "vs baseline 1000.00 s" in n["text"]]
    assert not [n for n in notes if "vs baseline 0.0 µs" in n["text"]]


@pytest.mark.parametrize("damage", ["corrupt", "old"])
def test_baseline_hints_from_an_xdist_worker_rewrite_it(pytester, observed, damage):
    accepted(pytester)
    text = _baseline(pytester).read_text()
    old = text.replace('"pytest_workload_baseline": 1', '"pytest_workload_baseline": 0')
    _baseline(pytester).write_text("{not json" if damage == "corrupt" else old)
    result = pytester.runpytest_subprocess(*PLAIN, *N2)
    result.assert_outcomes(failed=1)
    hint = "or rewrite it with" if damage == "corrupt" else "; rewrite it with"
    follow(pytester, result, hint).assert_outcomes(passed=1, deselected=1)
    pytester.runpytest_subprocess(*PLAIN, *N2).assert_outcomes(passed=1)


def test_not_replayed_under_xdist_hint_replays_them(pytester, project):
    accepted(pytester)
    result = pytester.runpytest_subprocess(*PLAIN, *N2)
    result.assert_outcomes(passed=1)
    replayed = follow(pytester, result, "1 top-level workload was not replayed for timing")
    replayed.assert_outcomes(passed=1, deselected=1)
    assert "not replayed" not in replayed.stdout.str()
    assert "without a timing baseline" not in replayed.stdout.str()  # it was judged
