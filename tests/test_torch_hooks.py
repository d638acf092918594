"""The torch internals the recorder's hooks rely on (``_record/torch_hooks.py``): each test fails
when a torch release changes what it names."""

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from pytest_workload._record.torch_hooks import (
    CallHooks,
    GlobalWatch,
    compiling_check,
    function_mode_check,
    tracing_checks,
)

TABLES = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
)


def _tables(module: nn.Module) -> list[int]:
    return [len(getattr(module, table)) for table in TABLES]


def test_a_call_hook_sees_kwargs_and_leaves_no_entry():
    model = nn.Linear(2, 2)
    seen: list[object] = []
    hooks = CallHooks(
        lambda m, args, kwargs: seen.append(("enter", kwargs)),
        lambda m, args, kwargs, result: seen.append(("exit", kwargs, result is not None)),
    )
    hooks.put_in([model])
    assert _tables(model) == [1, 1, 1, 1, 1]
    model(torch.rand(1, 2))
    hooks.take_out([model])
    assert seen == [("enter", {}), ("exit", {}, True)]
    assert _tables(model) == [0, 0, 0, 0, 0]


def test_a_forward_hook_taken_out_as_its_call_raises_leaves_the_exception_alone():
    model = nn.Linear(2, 2)
    hooks: CallHooks

    def exit_(m, args, kwargs, result):
        hooks.take_out([m], raising=m)

    hooks = CallHooks(lambda *_: None, exit_)
    hooks.put_in([model])
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        model(torch.rand(1, 3))
    assert _tables(model) == [0, 0, 0, 0, 0]


def test_a_forward_hook_added_after_ours_during_a_raising_call_waits_for_the_next_call():
    model = nn.Linear(2, 2)
    hooks: CallHooks

    def enter(m, args, kwargs):
        m.register_forward_hook(lambda *_: None)

    def exit_(m, args, kwargs, result):
        hooks.take_out([m], raising=m)

    hooks = CallHooks(enter, exit_)
    hooks.put_in([model])
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        model(torch.rand(1, 3))
    assert _tables(model) == [0, 0, 2, 1, 1]
    hooks.put_in([])
    assert _tables(model) == [0, 0, 1, 0, 0]


def test_the_watch_passes_a_calls_kwargs_to_its_partner():
    model = nn.Linear(2, 2)
    opened: list[object] = []
    watch: GlobalWatch

    def open_(m, args, kwargs=None):
        opened.append(kwargs)
        if kwargs is not None:
            watch.kwargs_passed(m)

    watch = GlobalWatch(lambda m, args: watch.pass_kwargs(m), open_)
    try:
        model(torch.rand(1, 2))
        watch.suspend()
        model(torch.rand(1, 2))
        watch.resume()
        model(input=torch.rand(1, 2))
    finally:
        watch.remove()
    assert len(opened) == 2 and opened[0] == {} and list(opened[1]) == ["input"]
    assert _tables(model) == [0, 0, 0, 0, 0]
    assert not torch.nn.modules.module._global_forward_pre_hooks


def test_tracing_is_told_from_running():
    tracing = tracing_checks()
    seen: list[bool] = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(tracing())
            return x + 1

    def told(run) -> list[bool]:
        seen.clear()
        run()
        return sorted(set(seen))

    x = torch.rand(2)
    assert told(lambda: Probe()(x)) == [False]
    assert told(lambda: torch.jit.trace(Probe(), (x,), check_trace=False)) == [True]
    assert told(lambda: torch.fx.symbolic_trace(Probe())) == [True]
    assert told(lambda: make_fx(Probe())(x)) == [True]
    with FakeTensorMode() as fake:
        assert told(lambda: Probe()(fake.from_tensor(x))) == [True]


def test_compiling_is_told_from_running():
    compiling = compiling_check()
    seen: list[bool] = []

    def f(x):
        seen.append(compiling())
        return x + 1

    f(torch.rand(2))
    torch.compile(f, backend="eager", fullgraph=False)(torch.rand(2))
    assert seen[0] is False and True in seen[1:]


def test_a_function_mode_is_seen():
    from torch.overrides import TorchFunctionMode

    on = function_mode_check()
    assert not on()
    with TorchFunctionMode():
        assert on()


def test_torch_refuses_strict_export_while_a_global_pre_hook_exists():
    """Why ``get_traced_fn`` is asked without the watch: when this fails, torch traces its
    export wrapper's ``forward`` despite global hooks, and ``_TracedFnChoice`` can go."""
    from torch._dynamo.exc import Unsupported
    from torch.nn.modules.module import register_module_forward_pre_hook

    handle = register_module_forward_pre_hook(lambda m, args: None)
    try:
        with pytest.raises(Unsupported, match=r"ModuleToTrace\.forward"):
            torch.export.export(nn.Linear(2, 2), (torch.rand(1, 2),), strict=True)
    finally:
        handle.remove()


def test_strict_export_while_the_watch_is_in_traces_as_without_it():
    import torch._dynamo.convert_frame as convert_frame
    import torch._dynamo.functional_export as functional_export

    original = convert_frame.get_traced_fn
    assert functional_export.get_traced_fn is original
    model, x = nn.Linear(2, 2), torch.rand(1, 2)
    plain = torch.export.export(model, (x,), strict=True)
    watched: list[object] = []
    compiling = compiling_check()

    def watch_call(m: nn.Module, args: object) -> None:
        if not compiling():
            watched.append(m)

    watch = GlobalWatch(watch_call, lambda *_: None)
    try:
        program = torch.export.export(model, (x,), strict=True)
        model(x)
        assert convert_frame.get_traced_fn(model) == (nn.Linear.forward, model)
        assert watch.is_in()
        watch.suspend()  # (as while a root runs: asking does not put it back)
        convert_frame.get_traced_fn(model)
        assert not watch.is_in()
    finally:
        watch.remove()
    assert str(program.graph) == str(plain.graph)
    assert watched == [model]  # (only the test's own call; export's trace ran it as a no-op)
    assert convert_frame.get_traced_fn is original is functional_export.get_traced_fn
