"""The hook lifecycle: recording changes nothing and leaves no hook behind, whatever the model
does (raises, recurses, runs compiled, scripted, wrapped or on another thread)."""

import contextlib
import threading
import warnings

import pytest
import torch
from torch import nn
from torch.nn.modules import module as torch_module
from torch.overrides import TorchFunctionMode

from pytest_workload import WorkloadRecorder
from pytest_workload._recording.stack import CallStack
from tests.models import TinyNet
from tests.recording import no_hooks_left, record


def test_recording_changes_no_output_gradient_or_mode(tiny):
    x = torch.rand(2, 3, 8, 8)
    tiny.train()
    torch.manual_seed(0)
    plain = TinyNet().train()
    plain.load_state_dict(tiny.state_dict())
    expected = plain(x, scale=2.0)
    expected.sum().backward()
    recorder = WorkloadRecorder("t", max_depth=2)
    with recorder.recording(all_roots=True):
        out = tiny(x, scale=2.0)
        out.sum().backward()
    assert torch.equal(out, expected)
    for (name, p), q in zip(tiny.named_parameters(), plain.parameters(), strict=True):
        assert torch.equal(p.grad, q.grad), name
    assert all(m.training for m in tiny.modules())
    assert no_hooks_left(tiny)


def test_hooks_removed_when_the_model_raises(tiny):
    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(2, 2)

        def forward(self, x):
            self.inner(x)
            raise ValueError("boom")

    boom = Boom()
    recorder = WorkloadRecorder("t", max_depth=1)
    with pytest.raises(ValueError, match=r"^boom$"), recorder.recording(all_roots=True):
        boom(torch.rand(1, 2))
    assert no_hooks_left(boom)
    assert len(recorder) == 0


def test_a_raising_call_is_not_recorded_and_recording_goes_on():
    boom = nn.Linear(2, 2)
    ok = nn.Linear(3, 3)
    recorder = WorkloadRecorder("t", max_depth=1)
    with recorder.recording(all_roots=True):
        with pytest.raises(RuntimeError):
            boom(torch.rand(1, 5))
        ok(torch.rand(1, 3))
    assert [w.input_signature.format() for w in recorder.workloads()] == ["(float32[1, 3])"]


def test_hooks_removed_on_keyboard_interrupt(tiny):
    class Interrupt(nn.Module):
        def forward(self, x):
            raise KeyboardInterrupt

    model = Interrupt()
    recorder = WorkloadRecorder("t")
    with pytest.raises(KeyboardInterrupt), recorder.recording(all_roots=True):
        model(torch.rand(1))
    assert no_hooks_left(model)


def test_compiled_module_records_the_original(tiny):
    compiled = torch.compile(tiny, backend="eager")
    x = torch.rand(1, 3, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the recorder must not trigger torch's hook warning
        table = record(lambda: [compiled(x), tiny(x)])
    assert len(table) == 1
    assert table.roots()[0].calls == 2
    assert table.roots()[0].class_name == "tests.models.TinyNet"


def test_data_parallel_records_the_wrapped_module(tiny):
    wrapped = nn.DataParallel(tiny)
    x = torch.rand(1, 3, 8, 8)
    table = record(lambda: [wrapped(x), tiny(x)], max_depth=1)
    roots = table.roots()
    assert len(roots) == 1 and roots[0].calls == 2
    assert {w.name for w in table.children(roots[0])} == {"stem", "blocks", "head"}


def test_scripted_module_records_the_top_level():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    table = record(lambda: scripted(torch.rand(2, 4)), max_depth=1)
    assert [(w.depth, w.class_name) for w in table] == [(0, "Sequential (scripted)")]
    assert no_hooks_left(scripted)


def test_recursion_through_the_same_module():
    class Recursive(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, n=2):
            x = self.lin(x)
            return self(x, n - 1) if n > 0 else x

    table = record(lambda: Recursive()(torch.rand(1, 2)), max_depth=1)
    assert [(w.depth, w.input_signature.format()) for w in table.roots()] == [
        (0, "(float32[1, 2])")
    ]
    inner = [w for w in table if w.name == "Recursive" and w.depth == 1]
    assert [w.input_signature.format() for w in inner] == ["(float32[1, 2], 1)"]


def test_calls_from_other_threads_are_not_recorded(tiny):
    x = torch.rand(1, 3, 8, 8)

    def calls():
        thread = threading.Thread(target=lambda: tiny(x))
        thread.start()
        thread.join()
        tiny(x, 3.0)

    table = record(calls)
    assert [w.input_signature.format() for w in table] == ["(float32[1, 3, 8, 8], 3.0)"]


def test_registration_hooks_are_gone_after_recording():

    before = len(torch_module._global_module_registration_hooks)
    record(lambda: nn.Linear(2, 2)(torch.rand(1, 2)))
    assert len(torch_module._global_module_registration_hooks) == before


def test_calls_made_while_an_exception_is_handled_are_told_from_calls_that_raise():
    model = nn.Linear(2, 2)
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=True):
        try:
            raise LookupError("handled by the test")
        except LookupError:
            model(torch.rand(1, 2))  # returns: recorded
            with pytest.raises(RuntimeError):
                model(torch.rand(1, 5))  # raises: not recorded
            model(torch.rand(1, 2))
    assert [(w.input_signature.format(), w.calls) for w in recorder.workloads()] == [
        ("(float32[1, 2])", 2)
    ]
    assert no_hooks_left(model)


def test_a_users_global_hook_fires_for_every_call_while_recording():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    seen: list[str] = []
    handle = torch_module.register_module_forward_pre_hook(
        lambda m, args: seen.append(type(m).__name__)
    )
    try:
        for _ in range(3):
            model(torch.rand(1, 2))
        expected, seen[:] = list(seen), []
        recorder = WorkloadRecorder("t")
        with recorder.recording(all_roots=True):
            for _ in range(3):
                model(torch.rand(1, 2))
    finally:
        handle.remove()
    assert seen == expected
    assert no_hooks_left(model)


class _SeenOps(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(getattr(func, "__name__", repr(func)))
        return func(*args, **(kwargs or {}))


def test_a_function_mode_the_test_enters_sees_the_same_operations_while_recording():
    def ops(recorder):
        model = nn.Sequential(nn.Linear(2, 2), nn.ReLU()).eval()
        mode = _SeenOps()
        recording = recorder.recording(all_roots=True) if recorder else contextlib.nullcontext()
        with recording, mode:
            for _ in range(8):  # traced, observed and settled calls
                model(torch.ones(1, 2))
        return mode.seen

    plain = ops(None)
    assert plain.count("linear") == 8
    assert ops(WorkloadRecorder("t", max_depth=1)) == plain


def test_a_root_the_recorder_failed_to_open_leaves_new_roots_watched(monkeypatch):
    def failing(*_):
        raise RuntimeError("injected")

    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=True):
        with monkeypatch.context() as patched:
            patched.setattr(CallStack, "open_root", failing)
            nn.Linear(2, 2)(torch.rand(1, 2))
        nn.Linear(3, 3)(torch.rand(1, 3))
    assert [w.input_signature.format() for w in recorder.workloads()] == ["(float32[1, 3])"]
    assert len(recorder.errors) == 1 and "injected" in recorder.errors[0]
