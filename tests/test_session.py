"""The session collector: what it keeps and in which order it reports it."""

import torch

from pytest_workload import WorkloadRecorder
from pytest_workload._session import WorkloadSession, WorkloadSettings
from tests.models import TinyNet


def table(nodeid, size):
    recorder = WorkloadRecorder(nodeid)
    model = TinyNet().eval()
    with recorder.recording(all_roots=True):
        model(torch.rand(1, 3, size, size))
    return recorder.workloads()


def test_tests_are_reported_in_collection_order():
    session = WorkloadSession(WorkloadSettings())
    session.add(table("t.py::z", 8))
    session.add(table("t.py::a", 8))
    session.set_collection_order(["t.py::z", "t.py::a"])
    assert [t.nodeid for t in session.tests] == ["t.py::z", "t.py::a"]
