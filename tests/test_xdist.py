"""xdist: a worker's payload and the controller's merge, crashed workers, checks across
workers."""

import dataclasses
import json

from pytest_workload import TestWorkloads
from pytest_workload._core.notes import Note
from pytest_workload._session import WorkloadSession, WorkloadSettings
from pytest_workload.xdist import WorkerMerge
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
        "its 2 tests are missing from this report (t.py::a, t.py::b)"
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


NUMPY_SCALAR = """
import numpy as np


class Skip(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.output_scale_factor = np.sqrt(2.0)  # a numpy.float64, as diffusers' skip blocks

    def forward(self, x):
        return self.lin(x) / self.output_scale_factor


@pytest.mark.workloads
@pytest.mark.parametrize("n", range(4))
def test_skip(n):
    Skip()(torch.rand(n + 1, 2))
"""


def test_a_numpy_scalar_attribute_reaches_the_controller(pytester, suite):
    suite(NUMPY_SCALAR)
    result = pytester.runpytest("-n", "2", "--workload-json=r.json")
    result.assert_outcomes(passed=4)
    assert result.ret == 0
    result.stdout.no_fnmatch_line("*workload problems*")
    report = json.loads((pytester.path / "r.json").read_text())
    assert len(report["tests"]) == 4


#: A worker's payload that execnet cannot send: the worker dies as it finishes.
UNSENDABLE = """
import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["pytest_workload"]["tests"].append(object())
"""


def test_a_session_whose_workload_data_was_lost_fails_and_says_so_in_one_line(pytester, suite):
    suite(NUMPY_SCALAR)
    pytester.makeconftest(UNSENDABLE)
    result = pytester.runpytest_subprocess("-n", "2", "--workload-json=r.json")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "xdist worker gw* sent no workload data (it crashed or was killed): the workloads of "
            "its * test* are missing from this report (*test_skip*)"
        ]
    )
    lines = [line for line in result.stdout.lines if "sent no workload data" in line]
    assert lines and all(len(line) < 400 for line in lines)


def test_a_payload_a_worker_could_not_send_is_named_with_why():
    session = WorkloadSession(WorkloadSettings())
    controller = WorkerMerge(session)
    for n in range(5):
        controller.ran_on("gw0", f"t.py::t{n}")
    controller.merge("gw0", {"unsent": "TypeError: Object of type int64 is not JSON serializable"})
    assert controller.crashed == ["gw0"]
    assert session.problems == [
        "xdist worker gw0 could not send its workload data (TypeError: Object of type int64 is "
        "not JSON serializable): the workloads of its 5 tests are missing from this report "
        "(t.py::t0, t.py::t1, t.py::t2 and 2 more)"
    ]
