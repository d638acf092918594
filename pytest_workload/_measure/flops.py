"""Counting a call's FLOPs with a dispatch mode around that call only.

The count is shape-based (``torch.utils.flop_counter``'s formulas), so identical on every
machine. The same mode watches in-place writes: a write to a tensor that is neither the
module's (parameters, buffers, tensor attributes), nor an input, nor made during the call,
changes state outside what a replay can put back, so such a call is never replayed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn


def _cpu_attention_formula() -> dict[Any, Any]:
    """torch counts fused attention only for its CUDA kernels, so under ``no_grad`` a CPU
    ``scaled_dot_product_attention`` would count 0 and FLOPs (which enter the snapshot) would
    depend on the machine. Its CPU kernel gets CUDA's formula; torch versions without that
    kernel run attention as matmuls, which are counted already."""
    import torch
    from torch.utils import flop_counter

    formula = getattr(flop_counter, "sdpa_flop_count", None)
    kernel = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if formula is None or kernel is None:
        return {}
    return {kernel: lambda query, key, value, *_, **__: formula(query, key, value)}


def _storage(tensor: torch.Tensor) -> int:
    """The storage's identity (views share it); 0 for a parameter not built yet."""
    from torch.nn.parameter import is_lazy

    return 0 if is_lazy(tensor) else int(tensor.untyped_storage()._cdata)


def tensors_in(values: Iterable[Any]) -> Iterator[torch.Tensor]:
    """Tensors in ``values``, looking into tuples, lists and dict values."""
    import torch

    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (tuple, list)):
            yield from tensors_in(value)
        elif isinstance(value, dict):
            yield from tensors_in(value.values())


def own_tensors(module: nn.Module) -> Iterator[torch.Tensor]:
    """Parameters, buffers and plain tensor attributes of ``module`` (not its submodules)."""
    import torch

    yield from (t for t in module._parameters.values() if t is not None)
    yield from (t for t in module._buffers.values() if t is not None)
    yield from (v for v in vars(module).values() if isinstance(v, torch.Tensor))


class FlopCount:
    """What one counted call did: its FLOPs and whether it wrote outside its own state."""

    def __init__(self) -> None:
        self.flops = 0
        self.foreign_write: str | None = None


def _mode_class() -> type:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry, shape_wrapper

    registry = {**flop_registry}
    registry.update(
        {
            k: shape_wrapper(v)  # type: ignore[no-untyped-call]
            for k, v in _cpu_attention_formula().items()
        }
    )
    writes: dict[Any, tuple[tuple[int, str], ...]] = {}

    def written(func: Any) -> tuple[tuple[int, str], ...]:
        if func not in writes:
            arguments = func._schema.arguments
            writes[func] = tuple(
                (i, a.name)
                for i, a in enumerate(arguments)
                if a.alias_info is not None and a.alias_info.is_write
            )
        return writes[func]

    class Counting(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __init__(self, count: FlopCount, allowed: set[int]) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.count = count
            self.allowed = allowed

        def __torch_dispatch__(
            self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            for i, name in written(func):
                target = args[i] if i < len(args) else kwargs.get(name)
                if isinstance(target, torch.Tensor) and _storage(target) not in self.allowed:
                    self.count.foreign_write = f"{func} wrote to a tensor outside the module"
            out = func(*args, **kwargs)
            for tensor in tensors_in((out,)):
                self.allowed.add(_storage(tensor))
            formula = registry.get(func.overloadpacket)
            if formula is not None:
                self.count.flops += int(formula(*args, **kwargs, out_val=out))
            return out

    return Counting


_MODE: list[type] = []


@contextmanager
def counting(module: nn.Module, inputs: Iterable[Any]) -> Iterator[FlopCount]:
    """Count the FLOPs of what runs in the block, and see its writes outside ``module``'s
    state and ``inputs``."""
    if not _MODE:
        _MODE.append(_mode_class())
    count = FlopCount()
    owned = (t for m in module.modules() for t in own_tensors(m))
    allowed = {_storage(t) for t in (*owned, *tensors_in(inputs))}
    with _MODE[0](count, allowed):
        yield count


def count_flops(target: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """FLOPs of one call ``target(*args, **kwargs)``."""
    with counting(target, (args, kwargs)) as count:
        target(*args, **kwargs)
    return count.flops
