"""Counting a traced call's costs (:mod:`.._workload.computation`) from its listed operations.

An operation reads its tensor inputs and writes its new outputs and in-place targets only where
it moved data: a view (every output on an input's storage) moves none. A new storage counts as
allocated from the operation that made it until it is freed: a weak reference's callback on
the storage, which CPython runs when its last reference (a view's too) goes, at the same point in
every run. The peak of each span (a recorded module's call) is over what was allocated since it
began.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .._workload.computation import Costs
from .flops import storage_of, tensor_list


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
        self.inputs = tensor_list(args)
        self.positional = len(self.inputs)
        if kwargs:
            self.inputs += tensor_list((kwargs,))
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
        # each followed storage's weak reference, by its id, and its key, bytes and spans: one
        # object per allocation for the garbage collector to count, gone with its storage (see
        # docs/benchmarks.md, section 12), not weakref.finalize's five
        self._refs: dict[int, weakref.ref[Any]] = {}
        self._followed: dict[int, tuple[int, int]] = {}
        self._spans: dict[int, list[SpanCosts]] = {}
        self._freed = _on_free(self._alive, self._refs, self._followed, self._spans)

    def account(
        self, name: str, tensors: Tensors, written: Iterable[Any], spans: list[SpanCosts]
    ) -> None:
        """Add an operation to ``spans`` (those whose lists it enters)."""
        inputs, storages, alive = tensors.inputs, tensors.storages, self._alive
        new = {}
        for storage, tensor in zip(tensors.made_storages, tensors.made, strict=True):
            if storage not in alive and storage not in storages:
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
        ref = weakref.ref(storage, self._freed)
        self._refs[id(ref)] = ref
        self._followed[id(ref)] = key, size
        self._spans[id(ref)] = spans

    def release(self) -> None:
        """Stop following the storages (the call's outputs outlive it): a weak reference
        dropped before its storage never calls back."""
        self._refs.clear()
        self._followed.clear()
        self._spans.clear()


def _on_free(
    alive: set[int],
    refs: dict[int, weakref.ref[Any]],
    followed: dict[int, tuple[int, int]],
    spans_of: dict[int, list[SpanCosts]],
) -> Callable[[weakref.ref[Any]], None]:
    """What runs as a followed storage is freed (a closure over the tables, so that the
    ``Allocations`` holding them is in no reference cycle)."""

    def freed(ref: weakref.ref[Any]) -> None:
        del refs[id(ref)]
        key, size = followed.pop(id(ref))
        alive.discard(key)
        for span in spans_of.pop(id(ref)):
            span.live -= size

    return freed
