"""Every kind of hint the plugin prints is a command: run literally (parsed from the output),
then the plain command, it leaves the outcome it promised (end-to-end runs; timings from the
injected stopwatch, so no outcome depends on this machine).

The project has two directories; the user's command runs one, and ``-k`` leaves out one of its
tests, which fails: a hint that dropped the path or ``-k`` would run it, and fail."""

from __future__ import annotations

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
    """Run the command printed after ``text`` (the first line that has it), literally."""
    for line in result.outlines:
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


def test_library_upgrade_hint_accepts_a_new_attribute(pytester, project):
    accepted(pytester)
    # an attribute that no computation reads, as a library release may add one
    test = pytester.path / "sub" / "test_sub.py"
    head = "        self.head = nn.Linear(4, 2)\n"
    test.write_text(test.read_text().replace(head, head + "        self.stem.variant = 'b'\n"))
    result = pytester.runpytest(*PLAIN)
    result.assert_outcomes(failed=1, deselected=1)
    follow(pytester, result, "attributes or class paths changed").assert_outcomes(
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
