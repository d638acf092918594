"""Structure hashes: the module-tree half of a workload's identity.

A module's structure is its fully qualified class, its configuration (``extra_repr()`` plus
plain public attributes such as ``stride`` or ``drop_rate``, memory addresses removed from
both), its train/eval mode, the names, shapes and dtypes of its own parameters and buffers,
and the structure hashes of its named children. Weight *values* never enter it: re-initialised,
re-seeded or pretrained copies of one architecture share a hash.

The hash is a Merkle tree (a child's hash feeds its parent's), so shared submodules are hashed
once and a changed layer can be located by comparing children.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import math
import re
from collections.abc import Callable, Iterator, MutableMapping
from types import BuiltinFunctionType, FunctionType
from typing import TYPE_CHECKING, Final

from .._model.canonical import Json, canonical_json, sha256_hex
from .._model.signature import dtype_name, qualified_name
from .._model.workload import ParamStats

if TYPE_CHECKING:
    from torch import nn


_ADDRESS: Final = re.compile(r"0x[0-9a-fA-F]+")


_SKIP: Final = object()


#: Memo of structure hashes for one recording, keyed by ``(id(module), module.training)``.
#: The module is kept alive in the value so its id cannot be reused while the memo lives.
StructureMemo = MutableMapping[tuple[int, bool], tuple["nn.Module", str]]


def is_compiled(module: nn.Module) -> bool:
    """A ``torch.compile`` wrapper (checked by shape, so torch._dynamo is never imported)."""
    return type(module).__name__ == "OptimizedModule" and hasattr(module, "_orig_mod")


def is_scripted(module: nn.Module) -> bool:
    """A TorchScript module: its submodules run inside the TorchScript interpreter."""
    import torch

    return isinstance(module, torch.jit.ScriptModule)


def unwrap(module: nn.Module) -> nn.Module:
    """The module a wrapper (torch.compile, DataParallel, DistributedDataParallel) runs."""
    import torch

    while True:
        if is_compiled(module):
            module = module._orig_mod  # type: ignore[assignment]
        elif isinstance(module, (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)):
            module = module.module
        else:
            return module


def class_name(module: nn.Module) -> str:
    """Fully qualified class; scripted modules report the class they were scripted from."""
    if is_scripted(module):
        return f"{getattr(module, 'original_name', type(module).__qualname__)} (scripted)"
    return qualified_name(type(module))


def _attribute_value(value: object) -> object:
    """A plain attribute as JSON, or _SKIP for anything that is not configuration."""
    if isinstance(value, enum.Enum):
        return f"{qualified_name(type(value))}.{value.name}"
    if isinstance(value, str):
        return _ADDRESS.sub("0x?", value)
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


def _tensor_entries(named: Iterator[tuple[str, object]], dtypes: bool) -> list[Json]:
    from torch.nn.parameter import is_lazy

    entries: list[Json] = []
    for name, tensor in named:
        if tensor is None:
            entries.append([name, None])
        elif is_lazy(tensor):  # type: ignore[arg-type]
            entries.append([name, "uninitialized"])
        else:
            shape: list[Json] = [int(d) for d in tensor.shape]  # type: ignore[attr-defined]
            dtype = dtype_name(tensor.dtype)  # type: ignore[attr-defined]
            entries.append([name, shape, dtype] if dtypes else [name, shape])
    return entries


def _config(module: nn.Module) -> str:
    text = module.extra_repr()
    if is_scripted(module):
        with contextlib.suppress(RuntimeError):  # a scripted module without forward has no code
            text += "\n" + str(module.code)
    return _ADDRESS.sub("0x?", text)


def structure_node(
    module: nn.Module, children: list[Json], *, dtypes: bool = True
) -> dict[str, Json]:
    """Everything about one module (its children given as hashes) that enters its hash."""
    return {
        "class": class_name(module),
        "config": _config(module),
        "attributes": _attributes(module),
        "training": module.training,
        "parameters": _tensor_entries(iter(module._parameters.items()), dtypes),
        "buffers": _tensor_entries(iter(module._buffers.items()), dtypes),
        "children": children,
    }


#: Builds the hashed description of one module from the module and its children's hashes.
NodeFunction = Callable[["nn.Module", list[Json]], dict[str, Json]]


def structure_hash(
    module: nn.Module, memo: StructureMemo | None = None, node: NodeFunction = structure_node
) -> str:
    """SHA-256 structure hash of a module tree; wrappers hash as the module they wrap.

    ``memo`` must only ever be used with one ``node`` function.
    """
    memo = {} if memo is None else memo
    target = unwrap(module)
    key = (id(target), target.training)
    cached = memo.get(key)
    if cached is not None and cached[0] is target:
        return cached[1]
    children: list[Json] = [
        [name, None if child is None else structure_hash(child, memo, node)]
        for name, child in target._modules.items()
    ]
    digest = sha256_hex(canonical_json(node(target, children)))
    memo[key] = (target, digest)
    return digest


def structure_hash_without_dtypes(module: nn.Module, memo: StructureMemo | None = None) -> str:
    """The structure hash with parameter and buffer dtypes left out: two trees that agree on
    it, and not on :func:`structure_hash`, differ in those dtypes and in nothing else
    (``memo`` is only ever used with this function)."""
    return structure_hash(module, memo, functools.partial(structure_node, dtypes=False))


def child_structure_hashes(
    module: nn.Module, memo: StructureMemo | None = None, node: NodeFunction = structure_node
) -> tuple[tuple[str, str], ...]:
    """``(name, structure hash)`` of a module's direct children, for locating changes."""
    target = unwrap(module)
    return tuple(
        (name, structure_hash(child, memo, node))
        for name, child in target._modules.items()
        if child is not None
    )


def param_stats(module: nn.Module) -> ParamStats:
    """Count and bytes of every distinct parameter in the tree (shared ones counted once)."""
    from torch.nn.parameter import is_lazy

    count = size = 0
    dtypes = set()
    for p in unwrap(module).parameters():
        if is_lazy(p):
            continue
        count += p.numel()
        size += p.numel() * p.element_size()
        dtypes.add(dtype_name(p.dtype))
    return ParamStats(count=count, bytes=size, dtypes=tuple(sorted(dtypes)))
