"""The performance gate on its own: which baselines it writes, and when it does not."""

import dataclasses

from pytest_workload import TestWorkloads
from pytest_workload._gate.perf import PerfGate
from pytest_workload._model.timing import Timing
from tests.recording import tiny_table


def timed(test, others_load):
    timing = Timing(0.01, 0.0, 20, 0.0099, 0.0101, "cpu", others_load=others_load)
    return TestWorkloads(test.nodeid, (dataclasses.replace(test.workloads[0], timing=timing),))


def test_a_baseline_timed_under_load_is_not_written(tmp_path):
    gate = PerfGate(tmp_path, update=True)
    result = gate.check(timed(tiny_table("t.py::a", 8), 0.6), 0.2)
    assert result.failures == ()
    assert list(tmp_path.rglob("*.json")) == []
    (note,) = result.notes
    assert note.endswith(
        "not written, its timing waited for a core 60% of its wall time; rerun "
        "`pytest --workload-snapshot --snapshot-update` on a quieter machine, or add "
        "--workload-perf=strict to write it anyway"
    )
    gate.check(timed(tiny_table("t.py::a", 8), 0.1), 0.2)
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_strict_writes_a_baseline_timed_under_load(tmp_path):
    PerfGate(tmp_path, mode="strict", update=True).check(timed(tiny_table("t.py::a", 8), 0.6), 0.2)
    assert len(list(tmp_path.rglob("*.json"))) == 1
