"""Counting a traced call's costs (:mod:`.._model.costs`) from its listed operations.

An operation reads its tensor inputs and writes its new outputs and in-place targets only where
it moved data: a view (every output on an input's storage) moves none. A new storage counts as
allocated from the operation that made it until it is freed: a ``weakref.finalize`` on the
storage, which CPython runs when its last reference (a view's too) goes, at the same point in
every run. The peak of each span (a recorded module's call) is over what was allocated since it
began.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .._model.costs import Costs
from .flops import storage_of, tensors_in


@dataclass
class SpanCosts:
    """One span's costs so far; ``live``: the bytes it allocated that are alive now."""

    read: int = 0
    written: int = 0
    live: int = 0
    peak: int = 0
    names: Counter[str] = field(default_factory=Counter)

    def freeze(self, *, partial: bool) -> Costs:
        ops = tuple(sorted(self.names.items()))
        return Costs(self.read, self.written, self.peak, ops, partial=partial)


class Tensors:
    """An operation's tensors and their storages, read once: its inputs (positional ones
    first) and the tensors it returned."""

    __slots__ = ("inputs", "made", "made_storages", "positional", "storages")

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any], made: list[Any]) -> None:
        self.inputs = list(tensors_in(args))
        self.positional = len(self.inputs)
        self.inputs += tensors_in((kwargs,))
        self.storages = [storage_of(t) for t in self.inputs]
        self.made = made
        self.made_storages = [storage_of(t) for t in self.made]


def _nbytes(tensor: Any) -> int:
    try:
        return int(tensor.numel()) * int(tensor.element_size())
    except (RuntimeError, NotImplementedError, ValueError):
        return 0  # (a parameter not built yet)


class Allocations:
    """The storages a traced call allocated that are alive, and what frees them."""

    def __init__(self) -> None:
        self._alive: set[int] = set()
        self._finalizers: list[weakref.finalize[..., None]] = []

    def account(
        self, name: str, tensors: Tensors, written: Iterable[Any], spans: list[SpanCosts]
    ) -> None:
        """Add an operation to ``spans`` (those whose lists it enters)."""
        inputs = tensors.inputs
        known = set(tensors.storages) | self._alive
        new = {}
        for storage, tensor in zip(tensors.made_storages, tensors.made, strict=True):
            if storage not in known:
                new[storage] = tensor
        targets = list(written)
        read = sum(map(_nbytes, inputs)) if new or targets else 0
        wrote = sum(map(_nbytes, (*new.values(), *targets)))
        for span in spans:
            span.read += read
            span.written += wrote
            span.names[name] += 1
        for key, tensor in new.items():
            self._allocate(key, tensor, spans)

    def _allocate(self, key: int, tensor: Any, spans: list[SpanCosts]) -> None:
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return  # (sparse, nested: no one storage to follow)
        size = int(storage.nbytes())
        self._alive.add(key)
        for span in spans:
            span.live += size
            span.peak = max(span.peak, span.live)
        finalizer = weakref.finalize(storage, self._free, key, size, spans)
        finalizer.atexit = False
        self._finalizers.append(finalizer)

    def _free(self, key: int, size: int, spans: list[SpanCosts]) -> None:
        self._alive.discard(key)
        for span in spans:
            span.live -= size

    def release(self) -> None:
        """Stop following the storages (the call's outputs outlive it)."""
        for finalizer in self._finalizers:
            finalizer.detach()
        self._finalizers.clear()
