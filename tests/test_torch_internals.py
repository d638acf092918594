"""The torch internals the package relies on (``pytest_workload/_torch_internals.py``): each
test fails, naming the member, when a torch release changes it; the last ones keep every
private torch member out of the package's other modules."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._python_dispatch import TorchDispatchMode

import pytest_workload
from pytest_workload._torch_internals import (
    GLOBAL_HOOK_TABLES,
    CallHooks,
    GlobalWatch,
    compilation_metrics,
    compiled_original,
    compiling_check,
    cpu_flash_attention,
    dispatch_mode_class,
    dynamo_cache_size,
    function_mode_check,
    global_hook_tables,
    graph_break_ids,
    module_hook_tables,
    op_schema,
    own_buffers,
    own_children,
    own_parameters,
    storage_key,
    tensor_version,
    torch_function_disabler,
    tracing_checks,
)

#: Every private member of a torch module the package names (dotted from an importable module)
MODULE_MEMBERS = (
    "torch._C.DisableTorchFunction",
    "torch._C._get_dispatch_mode",
    "torch._C._dispatch_tls_is_dispatch_key_included",
    "torch._C.DispatchKey.Python",
    "torch._C._get_tracing_state",
    "torch._C._TorchDispatchModeKey.FAKE",
    "torch._C._TorchDispatchModeKey.PROXY",
    "torch._C._TorchDispatchModeKey.FUNCTIONAL",
    "torch._C._is_torch_function_mode_enabled",
    "torch.fx._symbolic_trace._is_fx_tracing_tls",
    "torch.utils._python_dispatch.TorchDispatchMode",
    "torch._dynamo.convert_frame.get_traced_fn",
    "torch._dynamo.functional_export.get_traced_fn",
    "torch._C._dynamo.eval_frame._debug_get_cache_entry_list",
    "torch._dynamo.exc._load_gb_type_to_gb_id_map",
    "torch._dynamo.symbolic_convert.graph_break_log",
    "torch._dynamo.convert_frame.graph_break_log",
    "torch._dynamo.exc.graph_breaks_log",
    "torch._dynamo.utils.graph_break_dup_warning_checker.set",
    "torch._dynamo.callback.callback_handler.register_start_callback",
    "torch._dynamo.callback.callback_handler.remove_end_callback",
    "torch._dynamo.utils.get_compilation_metrics",
    "torch._dynamo.symbolic_convert.InstructionTranslatorBase.log_graph_break",
    *(f"torch.nn.modules.module.{name}" for name in GLOBAL_HOOK_TABLES),
)


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for name in parts[end:]:
            found = getattr(found, name)
        return found
    raise ImportError(dotted)


@pytest.mark.parametrize("member", MODULE_MEMBERS)
def test_torch_still_has(member: str):
    try:
        _resolve(member)
    except (ImportError, AttributeError) as error:
        pytest.fail(f"torch {torch.__version__} no longer has {member}: {error}")


def test_a_modules_tables_keep_none_entries_order_and_repeats():
    model = nn.Sequential(nn.Linear(2, 2, bias=False), nn.BatchNorm1d(2))
    model.register_module("again", model[0])
    model.register_module("gone", None)
    assert list(own_parameters(model[0]).items()) == [("weight", model[0].weight), ("bias", None)]
    assert list(own_buffers(model[1])) == ["running_mean", "running_var", "num_batches_tracked"]
    assert list(own_children(model).items()) == [
        ("0", model[0]), ("1", model[1]), ("again", model[0]), ("gone", None)
    ]  # fmt: skip
    del model[0].weight
    assert "weight" not in own_parameters(model[0])  # (live, not a copy)
    scripted = torch.jit.script(nn.Sequential(nn.Linear(2, 2)))  # (its tables are wrappers)
    parameters, children = own_parameters(scripted[0]), own_children(scripted)
    assert "weight" in parameters and "0" in children and "bias" not in children
    assert parameters["weight"].shape == (2, 2) and children["0"].original_name == "Linear"
    assert [name for name, _ in own_buffers(scripted[0]).items()] == []


def test_a_compiled_modules_original_is_found():
    model = nn.Linear(2, 2)
    assert compiled_original(torch.compile(model)) is model
    assert compiled_original(model) is None


def test_storages_versions_and_schemas_read():
    x = torch.zeros(4)
    assert storage_key(x.untyped_storage()) == storage_key(x[1:].untyped_storage())
    assert storage_key(x.untyped_storage()) != storage_key(x.clone().untyped_storage())
    before = tensor_version(x)
    x.add_(1)
    assert tensor_version(x) == before + 1
    written = [a.name for a in op_schema(torch.ops.aten.add_.Tensor).arguments if a.alias_info]
    assert written == ["self"]
    assert cpu_flash_attention() is torch.ops.aten._scaled_dot_product_flash_attention_for_cpu


def test_no_mode_sees_what_runs_with_torch_functions_disabled():
    from torch.overrides import TorchFunctionMode

    seen: list[object] = []

    class Seeing(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x = torch.ones(1)
    with Seeing():
        with torch_function_disabler()():
            torch.add(x, 1)
        assert not seen
        torch.add(x, 1)
    assert seen == [torch.add]


def test_a_dispatch_mode_sees_aten_operations():
    seen: list[object] = []

    class Seeing(dispatch_mode_class()):  # type: ignore[misc]
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Seeing():
        torch.ones(2).add_(1)
    assert torch.ops.aten.add_.Tensor in seen


def test_hook_tables_are_the_ones_hooks_go_to():
    model = nn.Linear(2, 2)
    handles = [
        model.register_forward_pre_hook(lambda *_: None),
        model.register_forward_hook(lambda *_: None),
        model.register_full_backward_pre_hook(lambda *_: None),
        model.register_full_backward_hook(lambda *_: None),
    ]
    assert [len(t) for t in module_hook_tables(model)] == [1, 1, 1, 1]
    for handle in handles:
        handle.remove()
    before = [len(t) for t in global_hook_tables()]
    assert len(before) == len(GLOBAL_HOOK_TABLES)
    handle = torch.nn.modules.module.register_module_forward_hook(lambda *_: None)
    after = [len(t) for t in global_hook_tables()]
    handle.remove()
    assert [b - a for a, b in zip(before, after, strict=True)] == [0, 1, 0, 0, 0, 0, 0]


PACKAGE = Path(pytest_workload.__file__).parent
#: private names of others the package may use: Python's own, and syrupy's (issue 23)
NOT_TORCH = {"_fields", "_getframe", "_sanitize_filename", "_exit"}
#: torch's member names that code passes to ``getattr`` as text
TABLE_NAMES = (
    "_orig_mod",
    "_parameters",
    "_buffers",
    "_modules",
    "_forward",
    "_backward",
    "_global",
)


def _private_uses(path: Path) -> list[str]:
    """Private members ``path`` reads off anything but ``self`` and ``cls``, and private modules
    it imports from torch."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            owner = node.value
            if node.attr.startswith("__") or node.attr in NOT_TORCH:
                continue
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            if any(part.startswith("_") for part in (node.module or "").split(".")):
                found.append(f"{path.name}:{node.lineno}: from {node.module}")
        elif isinstance(node, ast.Constant) and str(node.value).startswith(TABLE_NAMES):
            found.append(f"{path.name}:{node.lineno}: {node.value!r}")
    return found


def test_no_other_module_names_a_private_torch_member():
    outside = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_torch_internals.py"
        for use in _private_uses(path)
    ]
    assert not outside, f"private members outside _torch_internals.py: {outside}"


def test_the_private_member_check_sees_one(tmp_path: Path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from torch._C import X\nm._parameters\nself._ok\ngetattr(m, '_orig_mod')\n",
        encoding="utf-8",
    )
    assert _private_uses(probe) == [
        "probe.py:1: from torch._C",
        "probe.py:2: m._parameters",
        "probe.py:4: '_orig_mod'",
    ]


TABLES = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
)
#: a key no hook handle has (handles count up from 0)
KEY = -1


def _tables(module: nn.Module) -> list[int]:
    return [len(getattr(module, table)) for table in TABLES]


def test_a_call_hook_sees_kwargs_and_leaves_no_entry():
    model = nn.Linear(2, 2)
    seen: list[object] = []
    hooks = CallHooks(
        lambda m, args, kwargs: seen.append(("enter", kwargs)),
        lambda m, args, kwargs, result: seen.append(("exit", kwargs, result is not None)),
        KEY,
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

    hooks = CallHooks(lambda *_: None, exit_, KEY)
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

    hooks = CallHooks(enter, exit_, KEY)
    hooks.put_in([model])
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        model(torch.rand(1, 3))
    assert _tables(model) == [0, 0, 2, 1, 1]
    hooks.put_in([])
    assert _tables(model) == [0, 0, 1, 0, 0]


def test_the_watch_passes_a_calls_kwargs_to_its_partner_under_the_call_hooks_key():
    model = nn.Linear(2, 2)
    opened: list[object] = []
    watch: GlobalWatch

    def open_(m, args, kwargs=None):
        opened.append(kwargs)
        if kwargs is not None:
            hooks = CallHooks(lambda *_: None, lambda *_: None, watch.open_key)
            hooks.take_out([m])  # (the hand-over's flag is theirs)

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
    # a dispatch mode of the test's own is not a tracer (the check reads on past the key)
    with _PassThrough():
        assert told(lambda: Probe()(x)) == [False]


class _PassThrough(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


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


def test_dynamo_caches_a_compiled_forward_and_names_breaks_by_registry_id():
    class Once(nn.Module):
        def forward(self, x):
            return x + 1

    assert dynamo_cache_size(Once.forward.__code__) == 0
    torch.compile(Once(), backend="eager")(torch.rand(2))
    assert dynamo_cache_size(Once.forward.__code__) == 1
    metrics = compilation_metrics()()[-1]  # (the newest)
    assert (metrics.co_name, metrics.graph_op_count, metrics.recompile_reason) == (
        "forward",
        1,
        None,
    )
    assert graph_break_ids()["Failed to trace builtin operator"] == "GB0059"


def test_dynamo_logs_a_break_with_its_exception_as_exc():
    from torch._dynamo.symbolic_convert import InstructionTranslatorBase

    # (logged_graph_break reads that argument from the logging call's frame)
    assert "exc" in inspect.signature(InstructionTranslatorBase.log_graph_break).parameters
