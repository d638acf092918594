"""The performance gate on its own: which baselines it writes, and when it does not."""

import dataclasses
import json

from pytest_workload import TestWorkloads
from pytest_workload._gate.perf import PerfGate
from pytest_workload._gate.result import GateResult
from pytest_workload._model.timing import Timing
from tests.recording import tiny_table


def timed(test, others_load, median_s=0.01):
    timing = Timing(
        median_s, 0.0, 20, median_s * 0.99, median_s * 1.01, "cpu", others_load=others_load
    )
    return TestWorkloads(test.nodeid, (dataclasses.replace(test.workloads[0], timing=timing),))


def stored_median(tmp_path):
    (path,) = tmp_path.rglob("*.json")
    return json.loads(path.read_text())["timing"]["median_s"]


def test_a_baseline_timed_under_load_is_not_written(tmp_path):
    gate = PerfGate(tmp_path, update=True)
    result = gate.check(timed(tiny_table("t.py::a", 8), 0.6), 0.2)
    assert result.failures == ()
    assert list(tmp_path.rglob("*.json")) == []
    (note,) = result.notes
    assert note.kind == "baseline not written: load"
    assert note.text.endswith(
        "not written, its timing waited for a core 60% of its wall time; rerun "
        "`pytest --workload-snapshot --snapshot-update -p no:xdist` on a quieter machine, or "
        "add --workload-perf=strict to write it anyway"
    )
    gate.check(timed(tiny_table("t.py::a", 8), 0.1), 0.2)
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_strict_writes_a_baseline_timed_under_load(tmp_path):
    PerfGate(tmp_path, mode="strict", update=True).check(timed(tiny_table("t.py::a", 8), 0.6), 0.2)
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_in_one_session_the_fastest_timing_of_a_workload_is_its_baseline(tmp_path):
    """Tests that run one workload each time it; a later, slower timing (a burst of load)
    does not replace the baseline an earlier test wrote, nor is it called a refresh."""
    gate = PerfGate(tmp_path, mode="strict", update=True)
    first = gate.check(timed(tiny_table("t.py::a", 8), 0.0, 0.010), 0.2)
    assert first.notes[0].text.endswith("recorded")
    later = gate.check(timed(tiny_table("t.py::b", 8), 0.5, 0.760), 0.2)
    assert later == GateResult()  # nothing written, nothing said
    assert stored_median(tmp_path) == 0.010
    gate.check(timed(tiny_table("t.py::c", 8), 0.0, 0.008), 0.2)
    assert stored_median(tmp_path) == 0.008
    # a new session refreshes it, and says so
    refreshed = PerfGate(tmp_path, mode="strict", update=True).check(
        timed(tiny_table("t.py::a", 8), 0.0, 0.020), 0.2
    )
    assert "refreshed at 2.50x the old one" in refreshed.notes[0].text
    assert stored_median(tmp_path) == 0.020
