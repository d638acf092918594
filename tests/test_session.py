import dataclasses

import torch

from pytest_workload import TestWorkloads, WorkloadRecorder
from pytest_workload._model.timing import Timing
from pytest_workload._session import WorkloadSession, WorkloadSettings
from tests.models import TinyNet


def table(nodeid, size):
    recorder = WorkloadRecorder(nodeid)
    model = TinyNet().eval()
    with recorder.recording(all_roots=True):
        model(torch.rand(1, 3, size, size))
    return recorder.workloads()


def payload(*tests):
    return {"tests": [t.to_dict() for t in tests], "notes": []}


def test_collapse_between_workers_is_decided_once_on_the_controller():
    a = table("t.py::a", 8)
    b = table("t.py::b", 16)
    forged = TestWorkloads(
        b.nodeid, (dataclasses.replace(b.workloads[0], hash=a.workloads[0].hash),)
    )
    controller = WorkloadSession(WorkloadSettings(snapshot=True))
    controller.merge_worker_payload("gw0", payload(a))
    controller.merge_worker_payload("gw1", payload(forged))
    (problem,) = controller.check_across_workers()
    assert problem.startswith("workload hash collapse")
    assert controller.problems == [problem]


def test_collapse_within_one_worker_is_left_to_that_worker():
    a = table("t.py::a", 8)
    b = table("t.py::b", 16)
    forged = TestWorkloads(
        b.nodeid, (dataclasses.replace(b.workloads[0], hash=a.workloads[0].hash),)
    )
    controller = WorkloadSession(WorkloadSettings(snapshot=True))
    controller.merge_worker_payload("gw0", payload(a, forged))
    assert controller.check_across_workers() == []


def test_no_checks_without_the_gate():
    controller = WorkloadSession(WorkloadSettings(snapshot=False))
    controller.merge_worker_payload("gw0", payload(table("t.py::a", 8)))
    assert controller.check_across_workers() == []


def test_a_crashed_worker_is_reported_not_fatal():
    controller = WorkloadSession(WorkloadSettings())
    controller.ran_on("gw0", "t.py::elsewhere")
    controller.ran_on("gw1", "t.py::a")
    controller.ran_on("gw1", "t.py::a")
    controller.ran_on("gw1", "t.py::b")
    controller.merge_worker_payload("gw1", None)
    assert controller.tests == ()
    assert controller.problems == [
        "xdist worker gw1 sent no workload data (it crashed or was killed): the workloads of "
        "its tests are missing from this report: t.py::a, t.py::b"
    ]
    assert controller.report().problems == tuple(controller.problems)


def test_tests_are_reported_in_collection_order():
    session = WorkloadSession(WorkloadSettings())
    session.merge_worker_payload("gw1", payload(table("t.py::z", 8)))
    session.merge_worker_payload("gw0", payload(table("t.py::a", 8)))
    session.set_collection_order(["t.py::z", "t.py::a"])
    assert [t.nodeid for t in session.tests] == ["t.py::z", "t.py::a"]


def timed(test, others_load):
    timing = Timing(0.01, 0.0, 20, 0.0099, 0.0101, "cpu", others_load=others_load)
    return TestWorkloads(test.nodeid, (dataclasses.replace(test.workloads[0], timing=timing),))


def test_a_baseline_timed_under_load_is_not_written(tmp_path):
    settings = WorkloadSettings(snapshot=True, update=True, baselines=tmp_path)
    session = WorkloadSession(settings)
    assert session._check_perf(timed(table("t.py::a", 8), 0.6), 0.2) == []
    assert list(tmp_path.rglob("*.json")) == []
    (note,) = session.perf_notes
    assert note.endswith(
        "not written, other processes used 60% of the machine's CPU while it was timed; "
        "rerun the update on a quieter machine"
    )
    session._check_perf(timed(table("t.py::a", 8), 0.1), 0.2)
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_strict_writes_a_baseline_timed_under_load(tmp_path):
    settings = WorkloadSettings(snapshot=True, update=True, baselines=tmp_path, perf="strict")
    WorkloadSession(settings)._check_perf(timed(table("t.py::a", 8), 0.6), 0.2)
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_the_controller_reports_the_environment_its_workers_measured_in():
    worker = WorkloadSession(WorkloadSettings())
    worker.merge_worker_payload("gw0", payload())  # a worker that has imported torch
    sent = worker.worker_payload()
    assert sent["environment"]["device"]["kind"] == "cpu"
    controller = WorkloadSession(WorkloadSettings())
    controller.merge_worker_payload("gw0", sent)
    assert controller.report().environment == sent["environment"]
