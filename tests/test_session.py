"""The session collector: what it keeps and in which order it reports it."""

from pytest_workload._session import WorkloadSession, WorkloadSettings
from tests.recording import tiny_table


def test_tests_are_reported_in_collection_order():
    session = WorkloadSession(WorkloadSettings())
    session.add(tiny_table("t.py::z", 8))
    session.add(tiny_table("t.py::a", 8))
    session.set_collection_order(["t.py::z", "t.py::a"])
    assert [t.nodeid for t in session.tests] == ["t.py::z", "t.py::a"]
