"""Counting FLOPs with a dispatch mode where the function level cannot (:mod:`.tracer`): the
few operations whose matrix products run inside one kernel, and the whole call of a module
whose operations the function level cannot see (TorchScript); and the tensor helpers the
tracer shares. The count is shape-based (``torch.utils.flop_counter``'s formulas), so identical
on every machine; the mode also sees in-place writes. Entering it imports ``torch._dynamo``
(about a second, once per process): only a model that runs such an operation pays it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._torch_internals import cpu_flash_attention, dispatch_mode_class, op_schema, storage_key

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
    failed: str | None = None  # (the aten level reads every operation)


@functools.cache
def _mode_class() -> type:
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
    """Count the FLOPs of what runs in the block at the aten level, and see its writes
    outside ``module``'s state and ``inputs``: for a call whose operations the function level
    cannot see (a scripted module, or one that contains one)."""
    count = FlopCount()
    owned = (t for m in module.modules() for t in own_tensors(m))
    allowed = {storage_of(t) for t in (*owned, *tensor_list(inputs))}
    with _mode_class()(count, allowed):
        yield count


def dispatch_counted(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], allowed: set[int]
) -> tuple[Any, int, str | None]:
    """Run ``func(*args, **kwargs)`` under the counting mode: its result, its FLOPs, and a
    write to a tensor whose storage is not in ``allowed`` (which grows by what it makes)."""
    count = FlopCount()
    with _mode_class()(count, allowed):
        out = func(*args, **kwargs)
    return out, count.flops, count.foreign_write
