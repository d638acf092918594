"""Every private member of torch the package uses, named here and nowhere else, and checked
by ``tests/test_torch_internals.py`` (which fails, naming the member, when a torch release
changes one; a source check there keeps them out of every other module).

Module tables: the structure hash reads them because the public iterators skip ``None``
entries (``nn.Linear(bias=False)`` registers ``bias`` as None) and a child registered under two
names. Everything that needs neither uses ``named_parameters(recurse=False)`` and the like.

The recorder's hooks: ``Module._call_impl`` reads a module's hook tables as each call runs:
its forward pre-hooks (copied, with the global ones, into a tuple before the first runs)
before its forward, and its forward hooks after it (iterated live when the forward raised). A
hook put into these tables under a key of the recorder's own as a call opens, and taken out as
it ends, costs a few dict operations and leaves the tables as they were (what that keeps for
the test: docs/explanation/recording.md, "Recording changes nothing the test sees").
"""

from __future__ import annotations

import itertools
import operator
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import logging
    from types import ModuleType

    import torch
    from torch import nn
    from torch.nn import Parameter
    from torch.utils.hooks import RemovableHandle


_V = TypeVar("_V", covariant=True)


class Table(Protocol[_V]):
    """What a module's table offers: a scripted module's is a wrapper with no more than this."""

    def __contains__(self, key: object, /) -> bool: ...
    def __getitem__(self, key: str, /) -> _V: ...
    def items(self) -> Iterable[tuple[str, _V]]: ...


own_parameters: Callable[[nn.Module], Table[Parameter | None]] = operator.attrgetter("_parameters")
own_buffers: Callable[[nn.Module], Table[torch.Tensor | None]] = operator.attrgetter("_buffers")
own_children: Callable[[nn.Module], Table[nn.Module | None]] = operator.attrgetter("_modules")


def compiled_original(module: nn.Module) -> nn.Module | None:
    """The module a ``torch.compile`` wrapper runs (recognised by shape, so that
    ``torch._dynamo`` is never imported), or None for any other module."""
    if type(module).__name__ != "OptimizedModule":
        return None
    return getattr(module, "_orig_mod", None)


#: A storage's identity (views share it), read per operation: a C-level getter, no frame.
storage_key: Callable[[Any], int] = operator.attrgetter("_cdata")
#: The counter an in-place write moves (not an inference tensor's: it has none).
tensor_version: Callable[[torch.Tensor], int] = operator.attrgetter("_version")
#: Which arguments an aten operation overload writes to.
op_schema: Callable[[Any], Any] = operator.attrgetter("_schema")


def cpu_flash_attention() -> Any:
    """The CPU kernel of ``scaled_dot_product_attention`` (None where torch has none)."""
    import torch

    return getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


def torch_function_disabler() -> Callable[[], AbstractContextManager[None]]:
    """A context in which no function mode and no tensor subclass sees what runs."""
    from torch._C import DisableTorchFunction

    return DisableTorchFunction


def dispatch_mode_class() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


#: The hook tables of ``torch.nn.modules.module`` that apply to every module.
GLOBAL_HOOK_TABLES = (
    "_global_forward_pre_hooks",
    "_global_forward_hooks",
    "_global_backward_pre_hooks",
    "_global_backward_hooks",
    "_global_module_registration_hooks",
    "_global_parameter_registration_hooks",
    "_global_buffer_registration_hooks",
)


def global_hook_tables() -> list[dict[int, Any]]:
    from torch.nn.modules import module as torch_module

    return [getattr(torch_module, n) for n in GLOBAL_HOOK_TABLES]


def module_hook_tables(module: nn.Module) -> list[dict[int, Any]]:
    """A module's own hook tables that run with its calls."""
    tables = (module._forward_pre_hooks, module._forward_hooks)
    return [*tables, module._backward_pre_hooks, module._backward_hooks]


class CallHooks:
    """Put into modules' tables for the duration of one root call, under ``key``: the
    :class:`GlobalWatch`'s ``open_key``, so that the flag its watch hands a root's kwargs over
    with is the root's own pre-hook's, and is taken out with it."""

    def __init__(self, enter: Callable[..., None], exit_: Callable[..., None], key: int) -> None:
        self._key = key
        self._enter = enter
        self._exit = exit_
        # modules whose forward hook could not be taken out as their call raised
        self._left: list[nn.Module] = []

    def put_in(
        self, modules: Sequence[nn.Module], exit_: Callable[..., None] | None = None
    ) -> None:
        """``exit_``: in place of the forward hook given at construction."""
        if self._left:
            self.take_out_left()
        key, enter, exit_ = self._key, self._enter, exit_ or self._exit
        for module in modules:
            module._forward_pre_hooks[key] = enter
            module._forward_pre_hooks_with_kwargs[key] = True
            module._forward_hooks[key] = exit_
            module._forward_hooks_with_kwargs[key] = True
            module._forward_hooks_always_called[key] = True

    def take_out(self, modules: Sequence[nn.Module], raising: nn.Module | None = None) -> None:
        """Take the hooks out of ``modules``; ``raising``: the module whose forward raised,
        whose forward hooks torch is iterating (the running hook is its last)."""
        key = self._key
        for module in modules:
            module._forward_pre_hooks.pop(key, None)
            module._forward_pre_hooks_with_kwargs.pop(key, None)
            hooks = module._forward_hooks
            # An ordered dict's iterator past its last entry no longer checks for changes; one
            # with a hook after ours (added during the call) would raise, so that waits.
            if module is raising and hooks and next(reversed(hooks)) != key:
                self._left.append(module)
                continue
            hooks.pop(key, None)
            module._forward_hooks_with_kwargs.pop(key, None)
            module._forward_hooks_always_called.pop(key, None)

    def take_out_left(self) -> None:
        self.take_out(self._left)
        self._left = []


class GlobalWatch:
    """Two global forward pre-hooks, side by side, that open root calls. Torch gives a global
    pre-hook no kwargs; ``watch`` decides whether a call opens a root and, if it does, names
    ``open`` in that module's table of pre-hooks given kwargs, which torch reads only as it
    calls each hook: ``open`` then receives the call's kwargs (the name stays, for the
    :class:`CallHooks` put in under it, until they are taken out)."""

    def __init__(self, watch: Callable[..., None], open_: Callable[..., None]) -> None:
        from torch.nn.modules.module import register_module_forward_pre_hook

        self._handles: list[RemovableHandle] = [
            register_module_forward_pre_hook(hook) for hook in (watch, open_)
        ]
        self._watch_key, self.open_key = self._handles[0].id, self._handles[1].id
        self._watch, self._open = watch, open_
        table = self._handles[0].hooks_dict_ref()
        assert table is not None  # (torch's module-level table lives as long as torch)
        self._table: dict[int, Any] = table
        _TRACED_FN_CHOICE.add(self)

    def pass_kwargs(self, module: nn.Module) -> None:
        module._forward_pre_hooks_with_kwargs[self.open_key] = True

    def is_in(self) -> bool:
        return self._watch_key in self._table

    def suspend(self) -> None:
        """While a root runs (every other module keeps torch's hook-free path)."""
        self._table.pop(self._watch_key, None)
        self._table.pop(self.open_key, None)

    def resume(self) -> None:
        self._table[self._watch_key] = self._watch
        self._table[self.open_key] = self._open

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        _TRACED_FN_CHOICE.discard(self)


#: the modules that call ``get_traced_fn`` by their own global name
_TRACED_FN_MODULES = ("torch._dynamo.convert_frame", "torch._dynamo.functional_export")
_TRACED_FN = "get_traced_fn"


class _TracedFnChoice:
    """Strict ``torch.export`` asks ``get_traced_fn`` what to trace: while any global hook
    exists it answers ``__call__`` of export's own wrapper module, whose ``forward`` dynamo then
    refuses to inline (a file it skips). So while a watch exists, ``get_traced_fn`` (in each
    module that calls it) runs with every watch out of torch's table. It calls no module, so
    the watch misses no call. Those modules load with ``torch._dynamo`` (about a second): where
    they have not yet, a module registration hook waits for them, since export builds its
    wrapper module after loading them and before asking."""

    def __init__(self) -> None:
        self._watches: list[GlobalWatch] = []
        self._originals: dict[ModuleType, Callable[[Any], Any]] = {}
        self._waiting: RemovableHandle | None = None

    def add(self, watch: GlobalWatch) -> None:
        self._watches.append(watch)
        self._replace()
        if not self._originals and self._waiting is None:
            from torch.nn.modules.module import register_module_module_registration_hook

            # (left registered once done: torch iterates its table while calling this)
            self._waiting = register_module_module_registration_hook(lambda *_: self._replace())

    def discard(self, watch: GlobalWatch) -> None:
        self._watches.remove(watch)
        if self._watches:
            return
        for module, original in self._originals.items():
            setattr(module, _TRACED_FN, original)
        self._originals = {}
        if self._waiting is not None:
            self._waiting.remove()
            self._waiting = None

    def _replace(self) -> None:
        if self._originals:  # (done: the hook waiting for them is called on every registration)
            return
        modules = [sys.modules.get(name) for name in _TRACED_FN_MODULES]
        if None in modules:
            return
        for module in modules:
            assert module is not None  # (checked above)
            self._originals[module] = original = getattr(module, _TRACED_FN)
            setattr(module, _TRACED_FN, self._unwatched(original))

    def _unwatched(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def get_traced_fn(mod: Any) -> Any:
            shown = [watch for watch in self._watches if watch.is_in()]
            for watch in shown:
                watch.suspend()
            try:
                return original(mod)
            finally:
                for watch in shown:
                    watch.resume()

        return get_traced_fn


_TRACED_FN_CHOICE = _TracedFnChoice()


def compiling_check() -> Callable[[], bool]:
    """Whether dynamo is tracing (torch.compile, strict torch.export): the watch's first
    question, which dynamo answers as a constant, so that it traces the watch as a no-op."""
    from torch.compiler import is_compiling

    return is_compiling


def tracing_checks() -> Callable[[], bool]:
    """A check whether the test traces its model (``torch.jit.trace``, ``fx.symbolic_trace``,
    or a fake, proxy or functional tensor mode: non-strict ``torch.export``, ``make_fx``,
    functionalization): a call then is no workload."""
    from torch._C import DispatchKey, _get_dispatch_mode, _get_tracing_state
    from torch._C import _dispatch_tls_is_dispatch_key_included as included
    from torch._C import _TorchDispatchModeKey as Mode
    from torch.fx._symbolic_trace import _is_fx_tracing_tls

    modes, python = (Mode.FAKE, Mode.PROXY, Mode.FUNCTIONAL), DispatchKey.Python

    def tracing() -> bool:  # (once per call at top level: no generator where no mode is on)
        return (
            _get_tracing_state() is not None
            # (torch includes the Python key while any dispatch mode is on: one read if none is)
            or (included(python) and any(_get_dispatch_mode(m) is not None for m in modes))
            # fx's thread-local flag, read from the thread's own dict: torch's getter raises and
            # catches an AttributeError on every call in a thread that never traced (0.5 µs)
            or vars(_is_fx_tracing_tls).get("flag", False)
        )

    return tracing


def function_mode_check() -> Callable[[], bool]:
    """The test's, or the recorder's tracer."""
    from torch._C import _is_torch_function_mode_enabled

    return _is_torch_function_mode_enabled


# -- dynamo, for observing the test's own torch.compile (imported only once one runs) -------


def dynamo_cache_size(code: Any) -> int:
    """How many compiled entries dynamo holds for a code object (shared by every instance of
    a module class and every ``torch.compile`` of it)."""
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list

    return len(_debug_get_cache_entry_list(code))


def graph_break_ids() -> dict[str, str]:
    """Dynamo's graph-break registry: its type of a break -> the break's stable id
    (``GB0059``), past types included."""
    from torch._dynamo.exc import _load_gb_type_to_gb_id_map

    return dict(_load_gb_type_to_gb_id_map())


def graph_break_loggers() -> tuple[tuple[logging.Logger, ...], Any]:
    """The ``graph_breaks`` artifact loggers dynamo writes a break to (while its exception is
    being handled), and the checker that shortens a break it logged before (a set that
    grows while they are enabled)."""
    from torch._dynamo import convert_frame, exc, symbolic_convert, utils

    loggers = (symbolic_convert.graph_break_log, convert_frame.graph_break_log)
    return (*loggers, exc.graph_breaks_log), utils.graph_break_dup_warning_checker


def logged_graph_break() -> BaseException | None:
    """Called from a handler of a ``graph_breaks`` logger: the exception of the break being
    logged. ``InstructionTranslatorBase.log_graph_break(..., exc)`` logs it as its ``exc``
    argument, at times outside the handler of the exception (a data-dependent jump); the
    frame compile's own logging does so while handling it."""
    # (the handler's caller frames, up to dynamo's)
    for frame, _ in itertools.islice(traceback.walk_stack(sys._getframe(2)), 12):
        if frame.f_code.co_name == "log_graph_break":
            exc = frame.f_locals.get("exc")
            return exc if isinstance(exc, BaseException) else None
    return sys.exc_info()[1]


def compile_callbacks() -> Any:
    """Dynamo's compile callbacks: ``register_start_callback``/``register_end_callback`` and
    their ``remove_`` twins; a start runs as the outermost compile of a frame begins, an end
    as it ends (raised or not)."""
    from torch._dynamo.callback import callback_handler

    return callback_handler


def compilation_metrics() -> Callable[[], list[Any]]:
    """Dynamo's record of its recent compiles, one ``CompilationMetrics`` per frame compile
    (``co_name``, ``co_filename``, ``co_firstlineno``, ``graph_op_count``, ``fail_type``,
    ``recompile_reason``, ``is_forward``), oldest first; the list is a copy."""
    from torch._dynamo.utils import get_compilation_metrics

    return get_compilation_metrics
