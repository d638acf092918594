"""The state that defines what a call computes, captured when it was made.

A forward computes something different in train and eval mode, with another parameter dtype
or device, with grad or inference mode on or off, and under autocast. All of it is read at a
new workload's first call; a replay runs under exactly that, or not at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import nn

#: Device types whose autocast state is captured.
_AUTOCAST_DEVICES = ("cpu", "cuda")


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
        (kind, torch.is_autocast_enabled(kind), _name(torch.get_autocast_dtype(kind)))
        for kind in _AUTOCAST_DEVICES
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
