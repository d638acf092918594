"""The session collector: what it keeps, in which order it reports it, and what an xdist
worker sends (``to_payload``) and its controller takes in (``absorb``)."""

import json

import torch

from pytest_workload._core.notes import Note
from pytest_workload._recording.recorder import WorkloadRecorder
from pytest_workload._session import WorkloadSession, WorkloadSettings
from tests.models import TinyNet
from tests.recording import tiny_table

#: The gate on, judging collapses alone (no snapshot files, no timing baselines).
SETTINGS = WorkloadSettings(snapshot=True, perf="off", timing=False)
ORDER = ["t.py::a", "t.py::b", "t.py::c"]


def test_tests_are_reported_in_collection_order():
    session = WorkloadSession(WorkloadSettings())
    session.add(tiny_table("t.py::z", 8))
    session.add(tiny_table("t.py::a", 8))
    session.set_collection_order(["t.py::z", "t.py::a"])
    assert [t.nodeid for t in session.tests] == ["t.py::z", "t.py::a"]


def run(session, nodeid, size, keyer=None, passed=True):
    """One test recorded and finished by ``session``, as the plugin does."""
    recorder = WorkloadRecorder(nodeid, timing=session.settings.timing, keyer=keyer)
    with recorder.recording(all_roots=True):
        TinyNet().eval()(torch.rand(1, 3, size, size))
    return session.finish_test(recorder, None, passed=passed)


def controller_of(*workers, settings):
    """A controller that absorbed each worker's payload, sent as JSON."""
    controller = WorkloadSession(settings)
    for worker in workers:
        controller.absorb(json.loads(json.dumps(worker.to_payload())))
    return controller


def test_a_payload_absorbed_gives_the_state_that_sent_it():
    worker = WorkloadSession(SETTINGS)
    run(worker, "t.py::a", 8)
    worker.notes.append(Note("t.py::a", "a note"))
    worker.perf_notes.append(Note("t.py::a", "a perf note"))
    worker.snapshots.kept.append("t.py::a")
    worker.gate_failed, worker.regressions = 2, 1
    controller = controller_of(worker, settings=SETTINGS)
    assert controller.to_payload() == worker.to_payload()
    assert controller.report() == worker.report()


def test_two_workers_payloads_give_the_state_of_one_process():
    single, first, second = (WorkloadSession(SETTINGS) for _ in range(3))
    for session, nodeid, size in [(single, "t.py::a", 8), (single, "t.py::b", 16)]:
        run(session, nodeid, size)
    run(single, "t.py::c", 8, passed=False)
    run(first, "t.py::a", 8)
    run(second, "t.py::b", 16)
    run(second, "t.py::c", 8, passed=False)
    controller = controller_of(second, first, settings=SETTINGS)
    for session in (single, controller):
        session.set_collection_order(ORDER)
        assert session.check_collapses() == []
    assert controller.report() == single.report()
    assert controller.tests == single.tests
    assert controller.gate_failed == single.gate_failed
    assert len(controller.keys.found) == len(single.keys.found)


def same_key(module, args, kwargs):
    return "one key"


def test_a_collapse_across_workers_is_found_once_on_the_controller():
    single, first, second = (WorkloadSession(SETTINGS) for _ in range(3))
    assert run(single, "t.py::a", 8, same_key).failures == ()
    (failure,) = run(single, "t.py::b", 16, same_key).failures
    assert run(first, "t.py::a", 8, same_key).failures == ()
    assert run(second, "t.py::b", 16, same_key).failures == ()
    controller = controller_of(first, second, settings=SETTINGS)
    for session in (single, controller):
        session.set_collection_order(ORDER)
    assert single.check_collapses() == []
    (problem,) = controller.check_collapses()
    assert problem == failure and problem.startswith("user key collapse")
    assert controller.check_collapses() == []
    assert controller.problems == [problem]
    assert len(controller.keys.found) == len(single.keys.found) == 1


def test_a_failed_test_is_counted_not_failed_again():
    single = WorkloadSession(SETTINGS)
    run(single, "t.py::a", 8, same_key, passed=False)
    assert run(single, "t.py::b", 16, same_key).failures == ()
    assert single.check_collapses() == []
    assert len(single.keys.found) == 1
