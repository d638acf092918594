"""Measuring a recorded call: under the state it was made in, isolated from the program, with
its FLOPs counted on the call itself; what cannot be measured is said, never raised."""

from __future__ import annotations

import gc
import random
import weakref

import pytest
import torch
from torch import nn

from pytest_workload import WorkloadRecorder
from pytest_workload._perf.stopwatch import TimingPolicy
from pytest_workload._workload.timing import (
    UNMARKED_NOT_MEASURED,
    UNMARKED_OBSERVED,
    XDIST_NOT_MEASURED,
    XDIST_OBSERVED,
    observed,
)

POLICY = TimingPolicy(budget_s=0.01)

#: what every forward of the models below saw: (training, grad, inference, autocast)
SEEN: list[tuple[bool, bool, bool, bool]] = []


class Branchy(nn.Module):
    """Computes twice as much in train mode, and logs the state each call ran in."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(64, 64, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        SEEN.append(
            (
                self.training,
                torch.is_grad_enabled(),
                torch.is_inference_mode_enabled(),
                torch.is_autocast_enabled("cpu"),
            )
        )
        if self.training:
            x = self.lin(x)
        return self.lin(x)


def measured(fn, policy=POLICY, replays="timing"):
    """The workloads of ``fn()`` measured after it, and the report lines."""
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=True):
        fn()
    lines = recorder.measure(policy, replays=replays)
    return recorder.workloads(), lines


EVAL_FLOPS = 2 * 8 * 64 * 64


def test_an_eval_call_is_measured_in_eval_mode_after_the_test_trains_the_model():
    model = Branchy().eval()
    SEEN.clear()

    def test():
        model(torch.rand(8, 64))
        model.train()

    (w,), lines = measured(test)
    assert lines == []
    assert w.flops == EVAL_FLOPS
    assert w.measured.timing.kind == "replayed" and w.measured.flops.kind == "first call"
    assert len(SEEN) > 1 and {training for training, *_ in SEEN} == {False}
    assert all(m.training for m in model.modules())  # as the test left it


@pytest.mark.parametrize(
    "context",
    [torch.no_grad, torch.inference_mode, lambda: torch.autocast("cpu", dtype=torch.bfloat16)],
    ids=["no_grad", "inference_mode", "autocast"],
)
def test_a_call_is_replayed_in_the_modes_it_was_made_in(context):
    model = Branchy().eval()
    SEEN.clear()

    def test():
        with context():
            model(torch.rand(8, 64))

    (w,), lines = measured(test)
    assert lines == [] and w.measured.timing.kind == "replayed"
    assert len(SEEN) > 1 and set(SEEN) == {SEEN[0]}
    assert torch.is_grad_enabled() and not torch.is_autocast_enabled("cpu")


def test_a_model_cast_after_its_call_is_not_measured_and_keeps_its_flops():
    model = Branchy().eval()

    def test():
        model(torch.rand(8, 64))
        model.half()

    (w,), (line,) = measured(test)
    assert w.flops == EVAL_FLOPS and w.timing is None
    assert w.measured.flops.kind == "first call"
    assert str(w.measured.timing).startswith("not measured: the module changed after its call")
    assert "lin.weight was float32 on cpu, is float16 on cpu" in line
    assert next(model.parameters()).dtype == torch.float16


def test_a_submodule_replaced_after_the_call_is_not_measured():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    def test():
        model(torch.rand(2, 4))
        model[1] = nn.GELU()

    (w,), (line,) = measured(test)
    assert w.timing is None and w.flops == 2 * 2 * 4 * 4
    assert "its structure differs" in line


class Once(nn.Module):
    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls > 1:
            raise self.error
        return x * 2


@pytest.mark.parametrize(
    "error", [SystemExit(3), RuntimeError("stateful"), pytest.fail.Exception("twice")]
)
def test_an_exception_from_a_replay_is_reported_never_raised(error):
    model = Once(error)
    (w,), (line,) = measured(lambda: model(torch.rand(3)))
    raised = f"the replay raised {type(error).__name__}: {error}"
    assert line == f"model (tests.test_measure.Once): not measured: {raised}"
    assert str(w.measured.timing) == f"not measured: {raised}"
    assert w.flops == 0 and w.measured.flops.kind == "first call"
    assert model.calls == 1


def test_a_keyboard_interrupt_in_a_replay_stops_the_run():
    model = Once(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        measured(lambda: model(torch.rand(3)))
    assert model.calls == 1


SIDE = torch.zeros(3)


class WritesOutside(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        SIDE.add_(1)
        return x + 1


def test_a_forward_that_writes_outside_its_module_is_timed_from_its_calls():
    model = WritesOutside()
    SIDE.zero_()
    x = torch.rand(3)
    (w,), (line,) = measured(lambda: [model(x) for _ in range(4)])
    assert SIDE.tolist() == [4.0] * 3  # the test's own calls, no replay
    # calls 3 and 4: the first two ran under the tracer, which slows them
    assert w.timing is not None and w.timing.source == "recorded calls" and w.timing.n == 2
    assert w.measured.timing == observed("add_ wrote to a tensor outside the module")
    assert line.endswith("timed from its observed calls: " + str(w.measured.timing.reason))


def test_timing_off_replays_nothing_on_the_cpu():
    model = Once(RuntimeError("replayed"))
    (w,), lines = measured(lambda: model(torch.rand(3)), policy=None)
    assert lines == [] and model.calls == 1
    assert w.measured.timing.kind == "off" and w.measured.flops.kind == "first call"


def test_a_compiled_module_is_counted_by_a_replay_of_its_original():
    model = nn.Linear(4, 4)
    compiled = torch.compile(model, backend="eager")
    (w,), lines = measured(lambda: compiled(torch.rand(2, 4)), policy=None)
    assert lines == [] and w.flops == 2 * 2 * 4 * 4 and w.measured.flops.kind == "replayed"


def test_without_replays_a_workload_is_timed_from_the_calls_the_test_made():
    model = Once(RuntimeError("replayed"))
    (w,), lines = measured(lambda: model(torch.rand(3)), replays="counts")
    assert lines == [] and model.calls == 1
    assert w.timing is None  # its one call ran under the tracer
    assert w.measured.timing == XDIST_NOT_MEASURED and w.measured.flops.kind == "first call"


def test_without_replays_a_compiled_module_is_still_counted_by_a_replay_of_its_original():
    model = nn.Linear(4, 4)
    compiled = torch.compile(model, backend="eager")
    (w,), lines = measured(lambda: [compiled(torch.rand(2, 4)) for _ in range(3)], replays="counts")
    assert lines == [] and w.flops == 2 * 2 * 4 * 4 and w.measured.flops.kind == "replayed"
    assert w.measured.timing == XDIST_OBSERVED and w.timing.source == "recorded calls"


def test_without_replays_a_forward_that_writes_outside_keeps_its_own_reason():
    model = WritesOutside()
    SIDE.zero_()
    x = torch.rand(3)
    (w,), _ = measured(lambda: [model(x) for _ in range(4)], replays="counts")
    assert SIDE.tolist() == [4.0] * 3
    assert w.measured.timing == observed("add_ wrote to a tensor outside the module")


class Appends(nn.Module):
    """A forward with effects outside its module: a global list, a module-held generator."""

    def __init__(self) -> None:
        super().__init__()
        self.rng = random.Random(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        CALLS.append(self.rng.random())
        return x * 2


CALLS: list[float] = []


@pytest.mark.parametrize("policy", [POLICY, None], ids=["timed", "timing off"])
def test_never_replayed_a_workload_runs_only_the_calls_the_test_made(policy):
    model = Appends()
    CALLS.clear()
    (w,), lines = measured(lambda: [model(torch.rand(3)) for _ in range(4)], policy, "never")
    seen, expected = CALLS.copy(), random.Random(0)
    assert seen == [expected.random() for _ in range(4)]  # the test's four calls, no more
    assert lines == [] and w.flops == 0 and w.measured.flops.kind == "first call"
    if policy is None:
        assert w.timing is None and w.measured.timing.kind == "off"
    else:  # calls 3 and 4: the first two ran under the tracer
        assert w.measured.timing == UNMARKED_OBSERVED and w.timing.n == 2
        assert w.timing.source == "recorded calls"


def test_never_replayed_a_single_call_is_not_timed_and_its_inputs_are_not_copied():
    model = Once(RuntimeError("replayed"))
    recorder = WorkloadRecorder("t", replays=False)
    with recorder.recording(all_roots=True):
        model(torch.rand(3))
    (first,) = [e.done.first for e in recorder._rows._entries.values()]
    assert first.args == () and first.kwargs == {} and first.unsafe is None
    assert recorder.measure(POLICY, replays="never") == []
    (w,) = recorder.workloads()
    assert model.calls == 1 and w.timing is None
    assert w.measured.timing == UNMARKED_NOT_MEASURED and w.measured.flops.kind == "first call"


def test_never_replayed_a_compiled_module_says_its_flops_are_not_measured():
    compiled = torch.compile(nn.Linear(4, 4), backend="eager")
    (w,), (line,) = measured(lambda: compiled(torch.rand(2, 4)), POLICY, "never")
    assert w.flops is None and line.endswith(f": {w.measured.flops}")
    assert w.measured.flops.kind == "not measured"
    assert str(w.measured.flops.reason).startswith("its first call could not count them, and")


def _recorded_and_released() -> tuple[weakref.ref[nn.Module], WorkloadRecorder, object]:
    # in its own frame: the call-site lookup reads the caller's locals, which Python keeps
    # in the frame until it ends, as a test's frame ends before the next test
    model = nn.Linear(4, 4)
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=True):
        model(torch.rand(2, 4))
    recorder.measure(None)
    before = recorder.workloads()
    recorder.release()
    return weakref.ref(model), recorder, before


def test_released_recorder_keeps_its_workloads_and_no_model():
    ref, recorder, before = _recorded_and_released()
    gc.collect()
    assert ref() is None
    assert recorder.workloads() == before and len(recorder) == 1


def test_a_compiled_module_changed_after_its_call_has_no_flops_and_says_why():
    model = nn.Linear(4, 4)
    compiled = torch.compile(model, backend="eager")

    def test():
        compiled(torch.rand(2, 4))
        model.double()

    (w,), (line,) = measured(test, policy=None)
    assert w.flops is None and w.measured.flops == w.measured.timing
    assert str(w.measured.flops).startswith("not measured: the module changed after its call (")
    assert line.endswith(str(w.measured.flops))
