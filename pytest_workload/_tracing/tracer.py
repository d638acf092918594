"""Tracing a call's torch-level operations with a function mode (why not a dispatch mode:
docs/benchmarks.md, section 7). A call that wrote outside its module and inputs is never
replayed (docs/explanation/timing.md); which tensors may carry data, and the spans a
data-dependent event stops: hashes.md, "Where it stops"."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._core.frames import portable_site, user_frame
from .._torch_internals import torch_function_disabler
from .._workload.computation import (
    FOLLOWS_DATA,
    Computation,
    SubCall,
    join_path,
    relative_path,
    seen_from_caller,
)
from .cost_count import (
    Allocations,
    FlopCount,
    Span,
    Tensors,
    counting_mode,
    own_tensors,
    storage_of,
    tensor_list,
)
from .operations import (
    RANDOM,
    call_text,
    follows_data,
    needs_dispatch,
    op_flops,
    op_name,
)

if TYPE_CHECKING:
    from torch import nn

_IN_PLACE_DUNDERS = frozenset(
    f"__i{op}__"
    for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
               "lshift", "rshift", "matmul")
) | {"__setitem__", "__set__"}  # fmt: skip


class Trace:
    """What one traced call did: its spans' operations, its FLOPs and a foreign write."""

    def __init__(self, module: nn.Module, inputs: Iterable[Any], root: str | None) -> None:
        self.base = os.getcwd() if root is None else root
        self.flops = 0
        self.foreign_write: str | None = None
        #: Why tracing stopped part-way (an operation it could not read); None when it did not.
        self.failed: str | None = None
        self.allowed = {storage_of(t) for t in tensor_list(inputs)}
        self._spans = [Span("")]
        # storages of tensors computed in the call from constants alone
        self._constant: set[int] = set()
        self._events = 0
        self.allocations = Allocations()
        # parameters and buffers, each by its first path, and modules, by id
        self._paths: dict[int, str] = {}
        self._modules: dict[int, str] = {}
        for path, sub in module.named_modules():
            self._modules[id(sub)] = _quoted(path)
            self.allowed.update(storage_of(t) for t in own_tensors(sub))
        for path, tensor in (*module.named_parameters(), *module.named_buffers()):
            self._paths.setdefault(id(tensor), _quoted(path))

    def open_span(self, path: str) -> None:
        self._spans.append(Span(_quoted(path)))

    def close_span(self, name: str | None) -> Computation | None:
        """End the innermost span: as the call of ``name`` in its caller's, or (None: the call
        is not recorded) with its operations in place there."""
        span = self._spans.pop()
        if not self._spans:  # (a root call that raised closes the root's span too)
            self._spans.append(Span(""))
        caller = self._spans[-1]
        caller.ops += span.ops
        # (a caller's list that stopped holds only the call its event ran in)
        joins = not caller.stopped or caller.stopped == span.stopped
        if not caller.stopped and span.stopped:
            caller.stopped, caller.stop, caller.site = span.stopped, span.stop, span.site
        where = relative_path(caller.path, span.path)
        if name is None:
            if joins:
                caller.items.extend(
                    seen_from_caller(where, item)
                    if isinstance(item, str)
                    else SubCall(join_path(where, item.name), item.computation)
                    for item in span.items
                )
            return None
        computation = span.computation()
        if joins:
            caller.items.append(SubCall(where, computation))
        return computation

    def fail(self, exc: Exception) -> None:
        """Stop tracing, never the forward."""
        self.failed = f"its operations could not be traced ({type(exc).__name__}: {exc})"

    def root(self) -> Computation:
        """The root call's own operations (with its spans' calls)."""
        return self._spans[0].computation()

    def carries_data(self, tensor: Any) -> bool:
        return storage_of(tensor) not in self._constant

    def ran(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        tensors: Tensors,
        written: list[Any],
        event: bool,
        sync: bool,
    ) -> None:
        """After an operation (``event``: a data-dependent one; ``sync``: a host sync): keep
        which tensors it made or wrote may carry data, take those it made as the call's own (a
        view of an outside one is not), count its costs, and add it to the innermost span's
        list unless that stopped. A host sync counts in every open span, also after its list
        stopped: it is named by its code's line, not by what the data did."""
        if tensors.made or written:
            constant = (
                name not in RANDOM
                and all(s in self._constant for s in tensors.storages)
                and not _has_array((args, kwargs))
            )
            results = tensors.made_storages
            update = self._constant.add if constant else self._constant.discard
            for storage in (*results, *(storage_of(t) for t in written)):
                update(storage)
            foreign = set(tensors.storages[: tensors.positional]) - self.allowed
            self.allowed.update(s for s in results if s not in foreign)
        if counting := [s for s in self._spans if not s.stopped]:
            self.allocations.account(name, tensors, written, counting)
        span = self._spans[-1]
        span.ops += 1
        if not span.stopped:
            ordered = dict(sorted(kwargs.items())) if len(kwargs) > 1 else kwargs
            text = call_text(name, args, ordered, self._refer)
            span.items.append(text + FOLLOWS_DATA if event else text)
        if not sync:
            return
        frame = user_frame(sys._getframe(1))
        site = frame and portable_site(frame.f_code.co_filename, frame.f_lineno, self.base)
        key = name if site is None else f"{name} at {site}"
        for open_span in self._spans:
            open_span.syncs[key] += 1
        if event and not all(s.stopped for s in self._spans):
            self._events += 1
            where = self._module_running()
            for open_span in self._spans:
                if not open_span.stopped:
                    open_span.stopped, open_span.stop, open_span.site = self._events, where, site

    def _refer(self, tensor: Any) -> str | None:
        path = self._paths.get(id(tensor))
        return None if path is None else _relative(self._spans[-1].path, path)

    def _module_running(self) -> str | None:
        frame: Any = sys._getframe(1)
        while frame is not None:
            owner = frame.f_locals.get("self")
            if owner is not None and id(owner) in self._modules:
                return self._modules[id(owner)] or None
            frame = frame.f_back
        return None


@functools.lru_cache(maxsize=8192)  # (a suite's models share their module paths)
def _quoted(path: str) -> str:
    return ".".join(quote(name, safe="") for name in path.split(".")) if path else ""


# (each span refers to its own few parameters)
_relative = functools.lru_cache(maxsize=8192)(relative_path)


def _has_array(values: Any) -> bool:
    """Whether NumPy values (data the trace cannot follow) are among the arguments."""
    if isinstance(values, (tuple, list)):
        return any(_has_array(v) for v in values)
    if isinstance(values, dict):
        return any(_has_array(v) for v in values.values())
    return type(values).__module__ == "numpy"


@functools.cache
def _inplace_position(func: Any) -> int | None:
    """Where a Python function of torch takes ``inplace`` (``F.relu(x, True)``), if it does."""
    try:
        names = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return None
    return names.index("inplace") if "inplace" in names else None


def _written(func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    raw = getattr(func, "__name__", "")
    found = tensor_list((kwargs["out"],)) if kwargs.get("out") is not None else []
    if args and ((name.endswith("_") and not raw.startswith("__")) or raw in _IN_PLACE_DUNDERS):
        return found + tensor_list((args[0],))
    position = _inplace_position(func) if "inplace" in kwargs or len(args) > 1 else None
    inplace = kwargs.get("inplace") if position is None or len(args) <= position else args[position]
    if inplace is True and args:
        found += tensor_list((args[0],))
    if name == "batch_norm" and (args[5] if len(args) > 5 else kwargs.get("training")):
        found += tensor_list(args[1:3])
    return found


@functools.cache
def _tracing_mode() -> type:
    from torch import Tensor
    from torch.overrides import TorchFunctionMode

    DisableTorchFunction = torch_function_disabler()

    class Tracing(Trace, TorchFunctionMode):
        """A trace that is its own function mode. Around each operation the tracer's own reads
        (shapes, storages) run with torch functions disabled: a function mode the test entered
        (below this one) sees the operation, once, and none of them."""

        def __torch_function__(
            self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            if self.failed is not None:
                return func(*args, **kwargs)
            try:
                with DisableTorchFunction():
                    name = op_name(func)
                    dispatch = needs_dispatch(name, args, kwargs)
                    written = _written(func, name, args, kwargs)
                    if any(storage_of(t) not in self.allowed for t in written):
                        self.foreign_write = f"{name} wrote to a tensor outside the module"
            except Exception as exc:  # (a failure of the tracer must not reach the forward)
                self.fail(exc)
                return func(*args, **kwargs)
            if dispatch:
                with counting_mode()(count := FlopCount(), self.allowed):
                    out = func(*args, **kwargs)
                flops, self.foreign_write = count.flops, self.foreign_write or count.foreign_write
            else:
                out, flops = func(*args, **kwargs), None
            try:
                with DisableTorchFunction():
                    carries = self.carries_data
                    event = follows_data(func, name, args, kwargs, carries)
                    # a copy to the host reads no value, but is a sync (timing.md, "Costs")
                    copies = name == "cpu" and any(map(carries, tensor_list((args, kwargs))))
                    sync = event or copies
                    made = [out] if isinstance(out, Tensor) else tensor_list((out,))
                    if event or made or written:
                        tensors = Tensors(args, kwargs, made)
                        self.ran(name, args, kwargs, tensors, written, event, sync)
                        self.flops += op_flops(name, args, kwargs, out) if flops is None else flops
            except Exception as exc:
                self.fail(exc)
            return out

    return Tracing


@contextmanager
def tracing(module: nn.Module, inputs: Iterable[Any], root: str | None = None) -> Iterator[Trace]:
    """Trace what runs in the block, writes allowed to ``module``'s state and ``inputs``;
    sites relative to ``root`` (None: the working directory)."""
    with _tracing_mode()(module, inputs, root) as trace:
        try:
            yield trace
        finally:
            trace.allocations.release()


def count_flops(target: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """FLOPs of one call ``target(*args, **kwargs)``; None when tracing failed part-way."""
    with tracing(target, (args, kwargs)) as trace:
        target(*args, **kwargs)
    return None if trace.failed is not None else trace.flops
