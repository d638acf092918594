"""Tracing a call's torch-level operations with a function mode: what it computes, its FLOPs
and whether it writes outside its module.

A ``TorchFunctionMode`` sees each call of a torch function or tensor method the forward makes
(``F.gelu``, ``torch.cat(..., dim=1)``, ``x + y``), once, at the level the forward wrote it;
it does not import ``torch._dynamo``, which entering any ``TorchDispatchMode`` does (seconds,
once per process). An operation that returns a tensor, or writes to one, is recorded as text
(:mod:`.op_text`) into the innermost open *span* (a recorded module's call). FLOPs come from
the operations' shapes (:mod:`.op_flops`); the few operations that hide matrix products in
one kernel are counted by a dispatch mode around that one call.

The same pass watches in-place writes (``add_``, ``x[i] = ...``, ``inplace=True``, ``out=``,
batch norm's running statistics): a write to a tensor that is neither the module's
(parameters, buffers, tensor attributes), nor an input, nor made during the call (a view of an
outside tensor stays outside) changes state a replay cannot put back, so such a call is never
replayed.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._model.computation import Computation, SubCall
from .flops import dispatch_counted, own_tensors, storage_of, tensors_in
from .op_flops import needs_dispatch, op_flops
from .op_text import op_name, op_text

if TYPE_CHECKING:
    from torch import nn

_IN_PLACE_DUNDERS = frozenset(
    f"__i{op}__"
    for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
               "lshift", "rshift", "matmul")
) | {"__setitem__", "__set__"}  # fmt: skip


class Trace:
    """What one traced call did: its spans' operations, its FLOPs and a foreign write."""

    def __init__(self, allowed: set[int]) -> None:
        self.flops = 0
        self.foreign_write: str | None = None
        #: False while the recorder's own hooks run: their torch calls are not the model's.
        self.active = True
        #: Why tracing stopped part-way (an operation it could not read); None when it did not.
        self.failed: str | None = None
        self.allowed = allowed
        self._spans: list[list[str | SubCall]] = [[]]

    def open_span(self) -> None:
        self._spans.append([])

    def close_span(self, name: str | None) -> Computation | None:
        """End the innermost span: as the call of ``name`` in its caller's, or (None: the call
        is not recorded) with its operations in place there."""
        items = self._spans.pop()
        if not self._spans:
            self._spans.append([])
        if name is None:
            self._spans[-1].extend(items)
            return None
        computation = Computation(tuple(items))
        self._spans[-1].append(SubCall(name, computation))
        return computation

    def fail(self, exc: Exception) -> None:
        """Stop tracing, never the forward: what was traced is incomplete from here on."""
        self.failed = f"its operations could not be traced ({type(exc).__name__}: {exc})"
        self.active = False

    def root(self) -> Computation:
        """The operations outside every span: the root call's own (with its spans' calls)."""
        return Computation(tuple(self._spans[0]))

    def record(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._spans[-1].append(op_text(func, args, dict(sorted(kwargs.items()))))

    def check_writes(
        self, func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        for target in _written(func, name, args, kwargs):
            if storage_of(target) not in self.allowed:
                self.foreign_write = f"{op_name(func)} wrote to a tensor outside the module"

    def allow(self, out: Any, inputs: tuple[Any, ...]) -> None:
        """Tensors made by an operation are the call's own; a view of an outside one is not."""
        foreign = {storage_of(t) for t in tensors_in(inputs)} - self.allowed
        for tensor in tensors_in((out,)):
            storage = storage_of(tensor)
            if storage not in foreign:
                self.allowed.add(storage)


_INPLACE_ARGUMENT: dict[Any, int | None] = {}


def _inplace_position(func: Any) -> int | None:
    """Where a Python function of torch takes ``inplace`` (``F.relu(x, True)``), if it does."""
    if func not in _INPLACE_ARGUMENT:
        try:
            names = list(inspect.signature(func).parameters)
        except (TypeError, ValueError):
            names = []
        _INPLACE_ARGUMENT[func] = names.index("inplace") if "inplace" in names else None
    return _INPLACE_ARGUMENT[func]


def _written(func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[Any]:
    raw = getattr(func, "__name__", "")
    if kwargs.get("out") is not None:
        yield from tensors_in((kwargs["out"],))
    if args and ((name.endswith("_") and not raw.startswith("__")) or raw in _IN_PLACE_DUNDERS):
        yield from tensors_in((args[0],))
        return
    position = _inplace_position(func) if "inplace" in kwargs or len(args) > 1 else None
    inplace = kwargs.get("inplace") if position is None or len(args) <= position else args[position]
    if inplace is True and args:
        yield from tensors_in((args[0],))
    if name == "batch_norm" and (args[5] if len(args) > 5 else kwargs.get("training")):
        yield from tensors_in(args[1:3])


def _mode_class() -> type:
    from torch._C import DisableTorchFunction
    from torch.overrides import TorchFunctionMode

    class Tracing(TorchFunctionMode):
        """Around each operation the tracer's own reads (shapes, storages) run with torch
        functions disabled: a function mode the test entered (below this one) sees the
        operation, once, and none of them."""

        def __init__(self, trace: Trace) -> None:
            super().__init__()
            self.trace = trace

        def __torch_function__(
            self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            trace = self.trace
            if not trace.active:
                return func(*args, **kwargs)
            try:
                with DisableTorchFunction():
                    name = op_name(func)
                    dispatch = _needs_dispatch(name, args, kwargs)
                    trace.check_writes(func, name, args, kwargs)
            except Exception as exc:  # (a failure of the tracer must not reach the forward)
                trace.fail(exc)
                return func(*args, **kwargs)
            if dispatch:
                out, flops, write = dispatch_counted(func, args, kwargs, trace.allowed)
                trace.foreign_write = trace.foreign_write or write
            else:
                out, flops = func(*args, **kwargs), None
            try:
                with DisableTorchFunction():
                    if any(True for _ in tensors_in((out,))) or _wrote(name, func, args, kwargs):
                        trace.allow(out, args)
                        trace.record(func, args, kwargs)
                        counted = _counted(name, args, kwargs, out) if flops is None else flops
                        trace.flops += counted
            except Exception as exc:
                trace.fail(exc)
            return out

    return Tracing


def _needs_dispatch(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    try:
        return needs_dispatch(name, args, kwargs)
    except (AttributeError, IndexError, TypeError, ValueError):
        return False  # (an unusual signature: torch raises, or there is nothing to count)


def _counted(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> int:
    try:
        return op_flops(name, args, kwargs, out)
    except (AttributeError, IndexError, TypeError, ValueError, RuntimeError):
        return 0  # (a call torch accepted in a form the formulas do not read)


def _wrote(name: str, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return any(True for _ in _written(func, name, args, kwargs))


_MODE: list[type] = []


def allowed_storages(module: nn.Module, inputs: Iterable[Any]) -> set[int]:
    owned = (t for m in module.modules() for t in own_tensors(m))
    return {storage_of(t) for t in (*owned, *tensors_in(inputs))}


@contextmanager
def tracing(module: nn.Module, inputs: Iterable[Any]) -> Iterator[Trace]:
    """Trace what runs in the block; its writes are checked against ``module``'s state and
    ``inputs``."""
    if not _MODE:
        _MODE.append(_mode_class())
    trace = Trace(allowed_storages(module, inputs))
    with _MODE[0](trace):
        yield trace


def count_flops(target: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """FLOPs of one call ``target(*args, **kwargs)``; None when tracing failed part-way."""
    with tracing(target, (args, kwargs)) as trace:
        target(*args, **kwargs)
    return None if trace.failed is not None else trace.flops
