"""The performance gate on its own: which baselines it writes."""

import dataclasses
import json

from pytest_workload import TestWorkloads
from pytest_workload._core.notes import GateResult
from pytest_workload._perf.perf_gate import PerfGate
from pytest_workload._workload.timing import Timing
from tests.recording import tiny_table


def timed(test, median_s=0.01):
    timing = Timing(
        median_s,
        0.0,
        20,
        median_s * 0.99,
        median_s * 1.01,
        "cpu",
        ratio=median_s,
        ratio_ci=(median_s * 0.99, median_s * 1.01),
        calibration_s=1.0,
    )
    return TestWorkloads(test.nodeid, (dataclasses.replace(test.workloads[0], timing=timing),))


def stored_median(tmp_path):
    (path,) = tmp_path.rglob("*.json")
    return json.loads(path.read_text())["timing"]["median_s"]


def test_in_one_session_the_first_timing_of_a_workload_is_its_baseline(tmp_path):
    """Tests that run one workload each time it; a later timing does not replace the baseline
    an earlier test wrote, nor is it called a refresh."""
    gate = PerfGate(tmp_path, update=True)
    first = gate.check(timed(tiny_table("t.py::a", 8), 0.010), 0.2)
    assert first.notes[0].text.endswith("recorded")
    for later in (0.760, 0.008):
        assert gate.check(timed(tiny_table("t.py::b", 8), later), 0.2) == GateResult()
    assert stored_median(tmp_path) == 0.010
    # a new session refreshes it, and says so
    refreshed = PerfGate(tmp_path, update=True).check(timed(tiny_table("t.py::a", 8), 0.020), 0.2)
    assert "refreshed at 2.00x the old one" in refreshed.notes[0].text
    assert stored_median(tmp_path) == 0.020
