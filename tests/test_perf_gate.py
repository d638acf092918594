"""The performance gate on its own: which baselines it writes."""

import dataclasses
import json

from pytest_workload import TestWorkloads
from pytest_workload._core.notes import GateResult
from pytest_workload._perf.perf_gate import PerfGate, larger_budget
from pytest_workload._workload.timing import Timing
from tests.recording import tiny_table


def timed(test, median_s=0.01):
    timing = Timing(
        median_s,
        0.0,
        20,
        (median_s * 0.99, median_s * 1.01),
        "cpu",
        ratio=median_s,
        ratio_ci=(median_s * 0.99, median_s * 1.01),
        wait_s=0.0,
        wait_ci=(0.0, 0.0),
        calibration_s=1.0,
    )
    return TestWorkloads(test.nodeid, (dataclasses.replace(test.workloads[0], timing=timing),))


def stored_medians(tmp_path):
    return sorted(
        json.loads(path.read_text())["timing"]["median_s"] for path in tmp_path.rglob("*.json")
    )


def test_each_test_s_workload_has_its_own_baseline(tmp_path):
    """Two tests that run one workload (one hash) each get a baseline: neither is judged
    against the other's, nor replaces it."""
    gate = PerfGate(tmp_path, update=True)
    for nodeid, median_s in (("t.py::a", 0.010), ("t.py::b", 0.760)):
        (note,) = gate.check(timed(tiny_table(nodeid, 8), median_s), 0.2).notes
        assert note.text.endswith("recorded")
    assert stored_medians(tmp_path) == [0.010, 0.760]
    judged = PerfGate(tmp_path)
    assert judged.check(timed(tiny_table("t.py::a", 8), 0.010), 0.2) == GateResult()
    assert judged.check(timed(tiny_table("t.py::b", 8), 0.760), 0.2) == GateResult()
    assert judged.check(timed(tiny_table("t.py::a", 8), 0.020), 0.2).failures
    # a new session refreshes one, and says so
    refreshed = PerfGate(tmp_path, update=True).check(timed(tiny_table("t.py::a", 8), 0.020), 0.2)
    assert (
        "refreshed: calibrated ratio 2.00x (95% interval 1.96–2.04x) against the old one"
        in refreshed.notes[0].text
    )
    assert stored_medians(tmp_path) == [0.020, 0.760]


def test_a_baseline_of_another_computation_judges_nothing(tmp_path):
    """The same test and hash, other FLOPs (a data-dependent branch): the stored timing is
    not this computation's, so neither a regression nor a pass, but a missing baseline."""
    PerfGate(tmp_path, update=True).check(timed(tiny_table("t.py::a", 8), 0.010), 0.2)
    test = timed(tiny_table("t.py::a", 8), 0.100)
    w = test.workloads[0]
    other = TestWorkloads(test.nodeid, (dataclasses.replace(w, flops=(w.flops or 0) + 1),))
    result = PerfGate(tmp_path).check(other, 0.2)
    assert result.failures == ()
    (note,) = result.notes
    assert note.kind == "no baseline"
    assert "(this test's baseline timed another computation: FLOPs " in note.text


def test_a_timing_cut_short_is_given_a_budget_with_room_for_a_verdict():
    def budget(median_s):
        return larger_budget(Timing(median_s, 0.0, 1, (median_s, median_s), "cpu"))

    # 8 samples (6, and 2 for the warm-up) of a call and its calibration block, twice over,
    # in the 10 budgets a timing may take
    assert budget(1.0) == 2.0
    assert budget(0.33) == 0.66
    assert budget(0.301) == 0.61  # rounded up
    assert budget(1e-6) == 0.25  # never below the default
