"""Fingerprint scheme 1's module description, frozen: kept only to verify and migrate
snapshots that scheme 1 wrote, so nothing here may change what it returns.

Scheme 1 hashed the fully qualified class, the ``extra_repr()`` text and every plain public
attribute. Scheme 2 (:mod:`.structure`) dropped all three for the reasons given there.
"""

from __future__ import annotations

import contextlib
import enum
import math
from types import BuiltinFunctionType, FunctionType
from typing import TYPE_CHECKING, Final

from .._core.strict_json import Json
from .._torch_internals import own_buffers, own_parameters
from .._workload.signature import qualified_name
from .structure import ADDRESS, class_name, is_scripted, tensor_entries

if TYPE_CHECKING:
    from torch import nn


_SKIP: Final = object()


def _attribute_value(value: object) -> object:
    """A plain attribute as JSON, or _SKIP for anything that is not configuration."""
    if isinstance(value, enum.Enum):
        return f"{qualified_name(type(value))}.{value.name}"
    if isinstance(value, str):
        return ADDRESS.sub("0x?", value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (tuple, list)):
        items = [_attribute_value(v) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    if isinstance(value, (FunctionType, BuiltinFunctionType, type)):
        return f"{getattr(value, '__module__', None)}.{value.__qualname__}"
    import torch

    if isinstance(value, torch.dtype):
        return str(value)
    return _SKIP


def _attributes(module: nn.Module) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for name, value in vars(module).items():
        if name.startswith("_") or name == "training":
            continue
        described = _attribute_value(value)
        if described is not _SKIP:
            out[name] = described  # type: ignore[assignment]
    return out


def _config(module: nn.Module) -> str:
    text = module.extra_repr()
    if is_scripted(module):
        with contextlib.suppress(RuntimeError):  # a scripted module without forward has no code
            text += "\n" + str(module.code)
    return ADDRESS.sub("0x?", text)


def structure_node_v1(module: nn.Module, children: list[Json]) -> dict[str, Json]:
    """Everything about one module (its children given as hashes) that entered its scheme-1
    hash."""
    return {
        "class": class_name(module),
        "config": _config(module),
        "attributes": _attributes(module),
        "training": module.training,
        "parameters": tensor_entries(iter(own_parameters(module).items())),
        "buffers": tensor_entries(iter(own_buffers(module).items())),
        "children": children,
    }
