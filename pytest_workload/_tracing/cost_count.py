"""What a traced call costs: FLOPs counted at the dispatch level where the function level
cannot count them, bytes moved, peaks (docs/explanation/timing.md, "FLOPs" and "Costs").
Entering the dispatch mode imports ``torch._dynamo`` (docs/benchmarks.md, section 7): only a
model that runs such an operation pays it."""

from __future__ import annotations

import functools
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._torch_internals import cpu_flash_attention, dispatch_mode_class, op_schema, storage_key
from .._workload.computation import Computation, SubCall
from .._workload.costs import METRICS, Costs

if TYPE_CHECKING:
    import torch
    from torch import nn


@functools.cache
def torch_api() -> tuple[Any, Callable[[Any], bool]]:
    """``torch`` and ``is_lazy``, imported once: the tracer's helpers run per operation."""
    import torch
    from torch.nn.parameter import is_lazy

    return torch, is_lazy


def storage_of(tensor: torch.Tensor) -> int:
    """The storage's identity (views share it); 0 for a parameter not built yet; the tensor's
    own identity for one without a storage (sparse, nested)."""
    torch, is_lazy = torch_api()
    if type(tensor) is not torch.Tensor and is_lazy(tensor):  # (a plain tensor never is)
        return 0
    try:
        return storage_key(tensor.untyped_storage())
    except (RuntimeError, NotImplementedError):
        return id(tensor)


def tensor_list(values: Iterable[Any]) -> list[torch.Tensor]:
    """Tensors in ``values``, looking into tuples, lists and dict values."""
    found: list[torch.Tensor] = []
    _collect(values, torch_api()[0].Tensor, found)
    return found


def _collect(values: Iterable[Any], tensor: type, found: list[Any]) -> None:
    for value in values:
        if isinstance(value, tensor):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            _collect(value, tensor, found)
        elif isinstance(value, dict):
            _collect(value.values(), tensor, found)


def own_tensors(module: nn.Module) -> Iterator[torch.Tensor]:
    """Parameters, buffers and plain tensor attributes of ``module`` (not its submodules)."""
    import torch

    yield from module.parameters(recurse=False)
    yield from module.buffers(recurse=False)
    yield from (v for v in vars(module).values() if isinstance(v, torch.Tensor))


@dataclass
class FlopCount:
    """What a counted call did: its FLOPs and whether it wrote outside its own state."""

    flops: int = 0
    foreign_write: str | None = None


@functools.cache
def counting_mode() -> type:
    """The dispatch mode that counts into a :class:`FlopCount` and sees writes to a tensor whose
    storage is not in its ``allowed`` (which grows by what it makes)."""
    import torch
    from torch.utils import flop_counter

    registry = {**flop_counter.flop_registry}
    # torch counts fused attention only for its CUDA kernels, so under ``no_grad`` a CPU
    # ``scaled_dot_product_attention`` would count 0 and FLOPs (which enter the snapshot) would
    # depend on the machine. Its CPU kernel gets CUDA's formula; torch versions without that
    # kernel run attention as matmuls, which are counted already.
    formula = getattr(flop_counter, "sdpa_flop_count", None)
    kernel = cpu_flash_attention()
    if formula is not None and kernel is not None:
        registry[kernel] = flop_counter.shape_wrapper(  # type: ignore[no-untyped-call]
            lambda query, key, value, *_, **__: formula(query, key, value)
        )

    @functools.cache
    def written(func: Any) -> tuple[tuple[int, str], ...]:
        arguments = op_schema(func).arguments
        return tuple(
            (i, a.name)
            for i, a in enumerate(arguments)
            if a.alias_info is not None and a.alias_info.is_write
        )

    class Counting(dispatch_mode_class()):  # type: ignore[misc]
        def __init__(self, count: FlopCount, allowed: set[int]) -> None:
            super().__init__()
            self.count = count
            self.allowed = allowed

        def __torch_dispatch__(
            self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            for i, name in written(func):
                target = args[i] if i < len(args) else kwargs.get(name)
                if isinstance(target, torch.Tensor) and storage_of(target) not in self.allowed:
                    self.count.foreign_write = f"{func} wrote to a tensor outside the module"
            out = func(*args, **kwargs)
            for tensor in tensor_list((out,)):
                self.allowed.add(storage_of(tensor))
            formula = registry.get(func.overloadpacket)
            if formula is not None:
                self.count.flops += int(formula(*args, **kwargs, out_val=out))
            return out

    return Counting


@contextmanager
def counting(module: nn.Module, inputs: Iterable[Any]) -> Iterator[FlopCount]:
    """Count at the aten level what runs in the block, ``module``'s state and ``inputs``
    allowed: for a call whose operations the function level cannot see (a scripted module, or
    one containing one)."""
    owned = (t for m in module.modules() for t in own_tensors(m))
    count = FlopCount()
    with counting_mode()(count, {storage_of(t) for t in (*owned, *tensor_list(inputs))}):
        yield count


@dataclass
class Span:
    """The operations of a call in progress, by the path of its module from the root's, and
    its costs so far: each traced metric's (:data:`.METRICS`) by its field."""

    path: str
    items: list[str | SubCall] = field(default_factory=list)
    #: Every operation it ran, its children's included, also after its list stopped.
    ops: int = 0
    #: The event its list stopped at (numbered from 1 in the trace; 0: none yet), and where:
    #: the module running it, and the code that called it (``path:line``).
    stopped: int = 0
    stop: str | None = None
    site: str | None = None
    bytes_read: int = 0
    bytes_written: int = 0
    peak_bytes: int = 0
    #: host syncs by ``operation at path:line`` (over the whole call: see ``Trace.ran``)
    syncs: Counter[str] = field(default_factory=Counter)
    live: int = 0  # (bytes it allocated that are alive now)
    names: Counter[str] = field(default_factory=Counter)

    def computation(self) -> Computation:
        names = tuple(sorted(self.names.items()))
        counted = {m.field: m.of(getattr(self, m.field)) for m in METRICS if m.source == "trace"}
        costs = Costs.of(names, partial=bool(self.stopped), **counted)
        return Computation(tuple(self.items), self.ops, self.stop, costs, self.site)


class Tensors:
    """An operation's tensors and their storages, read once."""

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
        # each followed storage's weak reference, by its id, and its key, bytes and spans: one
        # object per allocation for the garbage collector to count, gone with its storage (see
        # docs/benchmarks.md, section 12), not weakref.finalize's five
        alive: set[int] = set()
        refs: dict[int, weakref.ref[Any]] = {}
        followed: dict[int, tuple[int, int]] = {}
        spans_of: dict[int, list[Span]] = {}
        self._alive, self._refs, self._followed, self._spans = alive, refs, followed, spans_of

        def freed(ref: weakref.ref[Any]) -> None:  # (over the tables, not self: no cycle)
            del refs[id(ref)]
            key, size = followed.pop(id(ref))
            alive.discard(key)
            for span in spans_of.pop(id(ref)):
                span.live -= size

        self._freed = freed

    def account(self, name: str, tensors: Tensors, written: list[Any], spans: list[Span]) -> None:
        inputs, storages, alive = tensors.inputs, tensors.storages, self._alive
        new = {}
        for storage, tensor in zip(tensors.made_storages, tensors.made, strict=True):
            if storage not in alive and storage not in storages:
                new[storage] = tensor
        read = sum(map(_nbytes, inputs)) if new or written else 0
        wrote = sum(map(_nbytes, (*new.values(), *written)))
        for span in spans:
            span.bytes_read += read
            span.bytes_written += wrote
            span.names[name] += 1
        for key, tensor in new.items():
            try:
                storage = tensor.untyped_storage()
            except (RuntimeError, NotImplementedError):
                continue  # (sparse, nested: no one storage to follow)
            size = int(storage.nbytes())
            alive.add(key)
            for span in spans:
                span.live += size
                span.peak_bytes = max(span.peak_bytes, span.live)
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
