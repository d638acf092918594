"""A new workload's first call, observed while the test makes it.

Before the call its inputs are copied, so a replay computes what the test computed even if the
forward or the test then changes them. During the call its operations are traced (by the
recorder, :mod:`.tracing`), which counts its FLOPs and sees writes outside the module and its
inputs. As it
returns (in its forward hook, still inside the test's contexts), its state is captured: modes,
train/eval, tensor placement, read after the forward so that a module that builds itself on
its first call is captured as built. Anything that makes a replay unsafe is kept as a reason.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Protocol

from .._fingerprint.ecosystem import copy_known
from .context import CallContext, capture

if TYPE_CHECKING:
    from torch import nn


class Counted(Protocol):
    """A traced or counted call: its FLOPs, and a write outside its module (None: none)."""

    flops: int
    foreign_write: str | None
    #: why counting stopped part-way (its FLOPs are then unknown)
    failed: str | None


_PLAIN = (int, float, bool, str, bytes, complex, type(None))


def _copy_mapping(value: dict[Any, Any]) -> tuple[Any, bool]:
    """A dict, or a copy of a dict subclass (a ``ModelOutput``, whose fields are its items)
    with its type and attributes, its items copied."""
    pairs = {k: copy_inputs(v) for k, v in value.items()}
    ok = all(ok for _, ok in pairs.values())
    if type(value) is dict:
        return {k: v for k, (v, _) in pairs.items()}, ok
    try:
        mapping = copy.copy(value)
        for k, (v, _) in pairs.items():
            mapping[k] = v
    except Exception:
        return value, False
    return mapping, ok


def copy_inputs(value: Any) -> tuple[Any, bool]:
    """A copy of call inputs with every tensor cloned, and whether it is a full copy (False
    when an input is an object that cannot be copied without knowing what it is)."""
    import torch

    if isinstance(value, torch.Tensor):
        clone = value.detach().clone()
        return clone.requires_grad_(value.requires_grad), True
    if isinstance(value, (tuple, list)):
        items = [copy_inputs(v) for v in value]
        if hasattr(type(value), "_fields"):  # a named tuple
            return type(value)(*(v for v, _ in items)), all(ok for _, ok in items)
        return type(value)(v for v, _ in items), all(ok for _, ok in items)
    if isinstance(value, dict):
        return _copy_mapping(value)
    if isinstance(value, (*_PLAIN, torch.dtype, torch.device, torch.Size)):
        return value, True
    known = copy_known(value)
    return (value, False) if known is None else known


class FirstCall:
    """Begun in a new root's pre-hook, ended in its forward hook (or when it raised)."""

    def __init__(
        self,
        target: nn.Module,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        copy: bool = True,
    ) -> None:
        """``copy``: copy the inputs, for a replay (False: it will never be replayed)."""
        self._target: nn.Module | None = target
        self.context: CallContext | None = None
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}
        self.unsafe: str | None = None
        if copy:
            (self.args, self.kwargs), copied = copy_inputs((args, kwargs))
            self.unsafe = None if copied else "an input is an object it cannot copy"
        #: what counts the call's FLOPs and sees its writes (set once its tracing began)
        self.counts: Counted | None = None
        self.ended = False

    @property
    def flops(self) -> int | None:
        if self.counts is None or self.counts.failed is not None:
            return None
        return self.counts.flops

    def end(self, *, returned: bool) -> None:
        """The call ended (its tracing has ended): capture its state if it returned (if it
        raised, nothing is: it is not recorded). Idempotent."""
        if self.ended:
            return
        self.ended = True
        if self._target is not None and returned:
            self.context = capture(self._target)
        self._target = None
        if self.counts is not None and self.counts.foreign_write is not None:
            self.unsafe = self.counts.foreign_write
