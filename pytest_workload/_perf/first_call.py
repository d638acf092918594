"""A new workload's first call, observed while the test makes it.

Its inputs are copied before the call, so a replay computes what the test computed even if the
forward or the test then changes them. As it returns (in its forward hook, still inside the
test's contexts), what defines what it computed is captured: train/eval and grad, inference and
autocast modes, and parameter dtypes and devices. It is read after the forward, so that a
module that builds itself on its first call is captured as built; a replay runs under exactly
that, or not at all.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._fingerprint.ecosystem import copy_known, reachable
from .device import KINDS

if TYPE_CHECKING:
    import torch
    from torch import nn

    from .._tracing import FlopCount, Trace


@dataclass(frozen=True)
class CallContext:
    """Modes and tensor placement of one call (process-local, never stored)."""

    grad: bool
    inference: bool
    #: (device type, enabled, dtype) per device type
    autocast: tuple[tuple[str, bool, str], ...]
    #: ``training`` of every module of the tree, in ``modules()`` order
    training: tuple[bool, ...]
    #: (name, dtype, device) of every parameter and buffer
    tensors: tuple[tuple[str, str, str], ...]


def _tensors(target: nn.Module) -> tuple[tuple[str, str, str], ...]:
    named = (*target.named_parameters(), *target.named_buffers())
    return tuple((name, _name(t.dtype), str(t.device)) for name, t in named)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def capture(target: nn.Module) -> CallContext:
    import torch

    autocast = tuple(
        (k.kind, torch.is_autocast_enabled(k.kind), _name(torch.get_autocast_dtype(k.kind)))
        for k in KINDS
        if k.autocast
    )
    return CallContext(
        grad=torch.is_grad_enabled(),
        inference=torch.is_inference_mode_enabled(),
        autocast=autocast,
        training=tuple(m.training for m in target.modules()),
        tensors=_tensors(target),
    )


def mismatch(context: CallContext, target: nn.Module) -> str | None:
    """Why ``target`` can no longer compute what its captured call computed (None: it can)."""
    if len(context.training) != sum(1 for _ in target.modules()):
        return "its module tree changed after the call"
    now = _tensors(target)
    if len(now) != len(context.tensors):
        return "its parameters or buffers changed after the call"
    for (name, dtype, device), (_, dtype_now, device_now) in zip(context.tensors, now, strict=True):
        if (dtype, device) != (dtype_now, device_now):
            return f"{name} was {dtype} on {device}, is {dtype_now} on {device_now}"
    return None


@contextmanager
def trained_as(context: CallContext, target: nn.Module) -> Iterator[None]:
    """Run the block with every module in its captured train/eval mode; the program's modes
    are back afterwards."""
    modules = list(target.modules())
    before = [m.training for m in modules]
    for module, training in zip(modules, context.training, strict=True):
        module.training = training
    try:
        yield
    finally:
        for module, training in zip(modules, before, strict=True):
            module.training = training


@contextmanager
def applied(context: CallContext, target: nn.Module) -> Iterator[None]:
    """Run the block in the captured modes (grad, inference, autocast, train/eval)."""
    import torch

    with ExitStack() as stack:
        stack.enter_context(torch.inference_mode(context.inference))
        stack.enter_context(torch.set_grad_enabled(context.grad))
        for kind, enabled, dtype in context.autocast:
            stack.enter_context(torch.autocast(kind, dtype=getattr(torch, dtype), enabled=enabled))
        stack.enter_context(trained_as(context, target))
        yield


_PLAIN = (int, float, bool, str, bytes, complex, type(None))
#: What a copy of inputs leaves out: the types it could not copy, by qualified name.
Missing = tuple[str, ...]


def _qualified(value: object) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def _copy_mapping(value: dict[Any, Any]) -> tuple[Any, Missing]:
    """A dict, or a copy of a dict subclass (a ``ModelOutput``, whose fields are its items)
    with its type and attributes, its items copied."""
    pairs = {k: copy_inputs(v) for k, v in value.items()}
    missing = tuple(m for _, found in pairs.values() for m in found)
    if type(value) is dict:
        return {k: v for k, (v, _) in pairs.items()}, missing
    try:
        mapping = copy.copy(value)
        for k, (v, _) in pairs.items():
            mapping[k] = v
    except Exception:
        return value, (_qualified(value),)
    return mapping, missing


def _enters(value: object) -> bool:
    """An object whose attributes an input's copy and restore reach into: not a class, a
    module, a plain value or a function (a module's attributes are its own)."""
    return not isinstance(value, (type, types.ModuleType, *_PLAIN)) and not callable(value)


def input_objects(values: object) -> list[object]:
    """The objects with attributes among ``values`` (a dataclass, a KV cache): what a forward
    may change in an input it is given, so a replay puts their attributes back after each call."""
    import torch

    return [v for v in reachable(values, _enters) if not isinstance(v, torch.Tensor)]


def _copy_object(value: object) -> tuple[Any, Missing]:
    """An object of a type the package does not know (a dataclass, a user's KV-cache class):
    a deep copy with every tensor it holds cloned; not copied when it is a module, or when a
    deep copy fails (it holds a stream, a lock, a generator)."""
    import torch

    if isinstance(value, torch.nn.Module):
        return value, (_qualified(value),)
    memo: dict[int, Any] = {}
    for part in reachable(value, _enters):
        if isinstance(part, torch.Tensor):
            memo[id(part)] = part.detach().clone().requires_grad_(part.requires_grad)
    try:
        return copy.deepcopy(value, memo), ()
    except Exception:
        return value, (_qualified(value),)


def copy_inputs(value: Any) -> tuple[Any, Missing]:
    """A copy of call inputs with every tensor cloned, and the types of the inputs it could not
    copy (none: a full copy)."""
    import torch

    if isinstance(value, torch.Tensor):
        clone = value.detach().clone()
        return clone.requires_grad_(value.requires_grad), ()
    if isinstance(value, (tuple, list)):
        items = [copy_inputs(v) for v in value]
        missing = tuple(m for _, found in items for m in found)
        if hasattr(type(value), "_fields"):  # a named tuple
            return type(value)(*(v for v, _ in items)), missing
        return type(value)(v for v, _ in items), missing
    if isinstance(value, dict):
        return _copy_mapping(value)
    if isinstance(value, (*_PLAIN, torch.dtype, torch.device, torch.Size)):
        return value, ()
    known = copy_known(value)
    if known is None:
        return _copy_object(value)
    copied, ok = known
    return copied, () if ok else (_qualified(value),)


class FirstCall:
    """Begun in a new root's pre-hook, ended in its forward hook (or when it raised);
    ``copy=False`` for a call that will never be replayed."""

    def __init__(
        self,
        target: nn.Module,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        copy: bool = True,
    ) -> None:
        self._target: nn.Module | None = target
        self.context: CallContext | None = None
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}
        self.unsafe: str | None = None
        if copy:
            (self.args, self.kwargs), missing = copy_inputs((args, kwargs))
            if missing:
                kinds = ", ".join(dict.fromkeys(missing))
                self.unsafe = f"an input is an object it cannot copy ({kinds})"
        #: what counts the call's FLOPs and sees its writes (set once its tracing began)
        self.counts: Trace | FlopCount | None = None
        self.ended = False

    @property
    def flops(self) -> int | None:
        if self.counts is None or self.counts.failed is not None:
            return None
        return self.counts.flops

    def end(self, *, returned: bool) -> None:
        """Capture the call's state if it returned (one that raised is not recorded)."""
        if self.ended:
            return
        self.ended = True
        if self._target is not None and returned:
            self.context = capture(self._target)
        self._target = None
        if self.counts is not None and self.counts.foreign_write is not None:
            self.unsafe = self.counts.foreign_write
