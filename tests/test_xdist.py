"""xdist: a worker's payload and the controller's merge, crashed workers, checks across
workers."""

import dataclasses
import json

from pytest_workload import TestWorkloads
from pytest_workload._core.notes import Note
from pytest_workload._session import WorkloadSession, WorkloadSettings
from pytest_workload.plugin import WorkerMerge
from tests.recording import tiny_table


def payload(*tests):
    return {"tests": [t.to_dict() for t in tests], "notes": []}


def test_collapse_between_workers_is_decided_once_on_the_controller():
    a = tiny_table("t.py::a", 8)
    b = tiny_table("t.py::b", 16)
    forged = TestWorkloads(
        b.nodeid, (dataclasses.replace(b.workloads[0], hash=a.workloads[0].hash),)
    )
    controller = WorkerMerge(WorkloadSession(WorkloadSettings(snapshot=True)))
    controller.merge("gw0", payload(a))
    controller.merge("gw1", payload(forged))
    (problem,) = controller.session.check_collapses()
    assert problem.startswith("workload hash collapse")
    assert controller.session.problems == [problem]


def test_collapse_within_one_worker_is_left_to_that_worker():
    a = tiny_table("t.py::a", 8)
    b = tiny_table("t.py::b", 16)
    forged = TestWorkloads(
        b.nodeid, (dataclasses.replace(b.workloads[0], hash=a.workloads[0].hash),)
    )
    controller = WorkerMerge(WorkloadSession(WorkloadSettings(snapshot=True)))
    controller.merge("gw0", payload(a, forged))
    assert controller.session.check_collapses() == []


def test_no_checks_without_the_gate():
    controller = WorkerMerge(WorkloadSession(WorkloadSettings(snapshot=False)))
    controller.merge("gw0", payload(tiny_table("t.py::a", 8)))
    assert controller.session.check_collapses() == []


def test_a_crashed_worker_is_reported_not_fatal():
    session = WorkloadSession(WorkloadSettings())
    controller = WorkerMerge(session)
    controller.ran_on("gw0", "t.py::elsewhere")
    controller.ran_on("gw1", "t.py::a")
    controller.ran_on("gw1", "t.py::a")
    controller.ran_on("gw1", "t.py::b")
    controller.merge("gw1", None)
    assert session.tests == ()
    assert session.problems == [
        "xdist worker gw1 sent no workload data (it crashed or was killed): the workloads of "
        "its tests are missing from this report: t.py::a, t.py::b"
    ]
    assert session.report().problems == tuple(session.problems)


def test_the_controller_reports_the_environment_its_workers_measured_in():
    worker = WorkloadSession(WorkloadSettings())  # a worker that has imported torch
    worker.add(tiny_table("t.py::a", 8))
    sent = worker.to_payload()
    assert sent["environment"]["device"]["kind"] == "cpu"
    controller = WorkloadSession(WorkloadSettings())
    WorkerMerge(controller).merge("gw0", sent)
    assert controller.report().environment == sent["environment"]
    assert controller.tests == worker.tests


def test_a_payload_survives_its_round_trip():
    session = WorkloadSession(WorkloadSettings())
    session.add(tiny_table("t.py::a", 8))
    session.notes.append(Note("t.py::a", "a note"))
    session.perf_notes.append(Note("t.py::a", "a perf note"))
    sent = session.to_payload()
    assert json.loads(json.dumps(sent)) == sent
