"""One torch-level operation as text: its name, then its arguments.

Tensors are written as dtype and shape (never values, never device), other arguments by
value, so the text is the same on every machine, under any seed and any weights, and differs
when the computation does: ``relu`` against ``gelu``, ``dim=1`` against ``dim=0``,
``eps=1e-05`` against ``eps=1e-06``. A parameter or buffer of the traced tree is followed by
its path (``float32[8, 8]@fc1.weight``), so two layers of one shape swapped are another text.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from typing import Any

from .flops import torch_api

#: A tensor's path in the traced tree (None: not a parameter or buffer of it).
Refer = Callable[[Any], "str | None"]

#: Containers written out in full up to this many items (longer ones: the first, and a count).
_MAX_ITEMS = 64
_SCALARS = (bool, int, str, type(None))
#: Exact types written as their repr (checked first: most arguments that are not tensors).
_PLAIN = frozenset((*_SCALARS, float))


def op_name(func: Any) -> str:
    """``F.gelu`` -> ``gelu``, ``Tensor.__add__`` -> ``add``, ``Tensor.T.__get__`` -> ``T``."""
    name = getattr(func, "__name__", None) or type(func).__name__
    if name in ("__get__", "__set__"):
        owner = getattr(getattr(func, "__self__", None), "__name__", "attribute")
        return owner if name == "__get__" else f"set {owner}"
    if name.startswith("__") and name.endswith("__") and len(name) > 4:
        return name[2:-2]
    return str(name)


def _tensor(value: Any) -> str:
    torch, is_lazy = torch_api()
    if type(value) is not torch.Tensor and is_lazy(value):  # (a plain tensor never is)
        return "uninitialized"
    return _tensor_text(value.dtype, value.shape, value.layout)


@functools.lru_cache(maxsize=8192)  # (a suite's operations repeat a few shapes)
def _tensor_text(dtype: Any, shape: Any, layout: Any) -> str:
    torch = torch_api()[0]
    layout_text = "" if layout == torch.strided else f", {str(layout).removeprefix('torch.')}"
    shape_text = ", ".join(str(int(s)) for s in shape)
    return f"{str(dtype).removeprefix('torch.')}[{shape_text}{layout_text}]"


def _none(value: Any) -> str | None:
    return None


def _sequence(values: Any, opening: str, closing: str, refer: Refer) -> str:
    items = list(values)
    shown = [describe_value(v, refer) for v in items[:_MAX_ITEMS]]
    if len(items) > _MAX_ITEMS:
        shown.append(f"… {len(items)} items")
    return opening + ", ".join(shown) + closing


def describe_value(value: Any, refer: Refer = _none) -> str:
    """One argument as the operation text shows it."""
    if type(value) in _PLAIN:
        return repr(value)
    torch = torch_api()[0]
    if isinstance(value, torch.Tensor):
        path = refer(value)
        return _tensor(value) if path is None else f"{_tensor(value)}@{path}"
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, (*_SCALARS, float, complex)):
        return repr(value)
    if isinstance(value, torch.Size):
        return _sequence(value, "(", ")", refer)
    if isinstance(value, (tuple, list)):
        return _sequence(
            value,
            "(" if isinstance(value, tuple) else "[",
            ")" if isinstance(value, tuple) else "]",
            refer,
        )
    if isinstance(value, dict):
        shown = (f"{k!r}: {describe_value(v, refer)}" for k, v in value.items())
        return "{" + ", ".join(shown) + "}"
    if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.device):
        return "device"  # (a device never enters a fingerprint: CPU and CUDA share it)
    if isinstance(value, slice):
        return ":".join(
            "" if v is None else describe_value(v, refer)
            for v in (value.start, value.stop, value.step)
        )
    if value is Ellipsis:
        return "..."
    qualname = getattr(value, "__qualname__", None)
    if callable(value) and isinstance(qualname, str):
        return f"{getattr(value, '__module__', '')}.{qualname}"
    return type(value).__qualname__


def op_text(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], refer: Refer = _none) -> str:
    """``name(arg, ..., key=value)``, keywords in the order given."""
    return call_text(op_name(func), args, kwargs, refer)


def call_text(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], refer: Refer) -> str:
    """:func:`op_text` of an operation whose name is known."""
    parts = [describe_value(a, refer) for a in args]
    parts += [f"{k}={describe_value(v, refer)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"
