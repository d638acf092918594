"""--workload-session-budget: a bound on the time a whole session spends timing.

The end-to-end tests use a budget of one nanosecond, which any timing spends: the first
workload is timed (nothing was spent before it) and no later one is, unless it has a timing
baseline. What they assert does not depend on how long anything took.
"""

from __future__ import annotations

import json

import pytest

from pytest_workload._perf.orchestrate import SessionBudget
from tests.pytester_suite import MODELS, SUITE_INI, XDIST_MODES


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _budget(
    budget_s: float, gated: frozenset[str] = frozenset()
) -> tuple[SessionBudget, FakeClock]:
    clock = FakeClock()
    return SessionBudget(budget_s, lambda h, device: h in gated, clock), clock


def _timing_that_takes(clock: FakeClock, seconds: float) -> str:
    clock.now += seconds
    return "timed"


def test_the_budget_admits_workloads_until_it_is_spent():
    budget, clock = _budget(1.0)
    assert budget.admits("a", "cpu")
    assert budget.charge(lambda: _timing_that_takes(clock, 0.6)) == "timed"
    assert budget.spent_s == pytest.approx(0.6)
    assert budget.admits("b", "cpu")
    budget.charge(lambda: _timing_that_takes(clock, 0.6))
    assert budget.spent_s == pytest.approx(1.2)
    assert not budget.admits("c", "cpu")


def test_a_gated_workload_is_always_admitted_and_charged():
    budget, clock = _budget(1.0, gated=frozenset({"gated"}))
    budget.charge(lambda: _timing_that_takes(clock, 2.0))
    assert not budget.admits("other", "cpu")
    assert budget.admits("gated", "cpu")
    budget.charge(lambda: _timing_that_takes(clock, 0.5))
    assert budget.spent_s == pytest.approx(2.5)


def test_a_timing_that_raises_is_charged_too():
    budget, clock = _budget(1.0)

    def failing() -> None:
        clock.now += 3.0
        raise RuntimeError("replay failed")

    with pytest.raises(RuntimeError):
        budget.charge(failing)
    assert budget.spent_s == pytest.approx(3.0)


SHAPES = """
@pytest.mark.parametrize("size", [4, 6, 8, 10])
@pytest.mark.workloads
def test_shape(size):
    Net().eval()(torch.rand(1, 3, size, size))
"""


@pytest.fixture
def shapes(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_shapes=MODELS + SHAPES)
    return pytester


def _timed(measured: dict) -> str:
    """How a workload was timed: the kind, or the policy that left its timing out."""
    return measured["timing_left_out"] or measured["timing"]


def _timings(pytester: pytest.Pytester, *args: str) -> tuple[dict[str, str], dict, list[str]]:
    """How each test's workload was timed, by its size, the JSON report and the output lines."""
    result = pytester.runpytest(*args, "--workload-json=r.json")
    result.assert_outcomes(passed=4)
    report = json.loads((pytester.path / "r.json").read_text())
    timings = {
        t["nodeid"].split("[")[1].rstrip("]"): _timed(t["workloads"][0]["measured"])
        for t in report["tests"]
    }
    for t in report["tests"]:
        w = t["workloads"][0]
        assert (w["timing"] is None) == (_timed(w["measured"]) == "budget")
        assert w["flops"] is not None  # (an untimed workload keeps its FLOPs)
    return timings, report, result.outlines


def test_workloads_past_the_budget_are_marked_counted_and_keep_their_hashes(shapes):
    timings, report, lines = _timings(shapes, "--workload-session-budget=1e-9", "-p", "no:xdist")
    assert timings == {"4": "replayed", "6": "budget", "8": "budget", "10": "budget"}
    assert report["not_timed"] == 3
    assert any(
        "3 workloads were not timed: the session's timing budget "
        "(--workload-session-budget=1e-09) was spent" in line
        for line in lines
    )


def test_without_a_budget_every_workload_is_timed_and_nothing_is_counted(shapes):
    timings, report, lines = _timings(shapes, "-p", "no:xdist")
    assert set(timings.values()) == {"replayed"}
    assert "not_timed" not in report
    assert not any("not timed" in line for line in lines)


def test_the_ini_key_sets_the_budget(shapes):
    shapes.makeini(SUITE_INI + "workload_session_budget = 1e-9\n")
    timings, _, _ = _timings(shapes, "-p", "no:xdist")
    assert list(timings.values()).count("budget") == 3


def test_workloads_with_a_baseline_are_timed_whatever_the_budget_left(shapes):
    gate = ("--workload-snapshot", "--workload-perf=strict", "-p", "no:xdist")
    # baselines for sizes 6 and 10 only
    shapes.runpytest(*gate, "--snapshot-update", "-k", "6 or 10").assert_outcomes(passed=2)
    timings, _, _ = _timings(shapes, *gate, "--snapshot-update", "--workload-session-budget=1e-9")
    assert timings == {"4": "replayed", "6": "replayed", "8": "budget", "10": "replayed"}


def test_each_xdist_worker_has_the_budget_and_the_controller_counts(shapes):
    # strict: xdist workers replay for timing only then (test_xdist_replays.py)
    strict = ("--workload-perf=strict", "--workload-session-budget=1e-9")
    timings, report, _ = _timings(shapes, *XDIST_MODES["n2"], *strict)
    untimed = sum(1 for t in timings.values() if t == "budget")
    assert 2 <= untimed <= 3  # (one timed per worker that ran a test)
    assert report["not_timed"] == untimed


def test_a_bad_budget_is_a_usage_error(shapes):
    result = shapes.runpytest("--workload-session-budget=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--workload-session-budget*expected a finite number > 0*"])
