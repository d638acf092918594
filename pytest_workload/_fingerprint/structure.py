"""Structure hashes: the module-tree half of a workload's identity (what enters one:
:func:`structure_hash`; what stays out, and why: docs/explanation/hashes.md, "What stays
out"). A child's hash feeds its parent's, so shared submodules are hashed once and a changed
layer is located by comparing children.
"""

from __future__ import annotations

import contextlib
import enum
import math
import re
from collections.abc import MutableMapping
from dataclasses import dataclass
from types import BuiltinFunctionType, FunctionType
from typing import TYPE_CHECKING, Final

from .._core.files import FINGERPRINT_SCHEME
from .._core.strict_json import INT_BOUND, Json, canonical_json, sha256_hex
from .._torch_internals import Table, compiled_original, own_buffers, own_children, own_parameters
from .._workload.modules import description_hash
from .._workload.signature import InputSignature, dtype_name, qualified_name
from .._workload.workload import ParamStats

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.nn import Parameter


ADDRESS: Final = re.compile(r"0x[0-9a-fA-F]+")
_SKIP: Final = object()


#: Memo of structure hashes for one recording, keyed by ``(id(module), module.training)``.
#: The module is kept alive in the value so its id cannot be reused while the memo lives.
StructureMemo = MutableMapping[tuple[int, bool], tuple["nn.Module", str]]


def is_compiled(module: nn.Module) -> bool:
    return compiled_original(module) is not None


def is_scripted(module: nn.Module) -> bool:
    import torch

    return isinstance(module, torch.jit.ScriptModule)


def unwrap(module: nn.Module) -> nn.Module:
    """The module a wrapper (torch.compile, DataParallel, DistributedDataParallel) runs."""
    import torch

    while True:
        original = compiled_original(module)
        if original is not None:
            module = original
        elif isinstance(module, (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)):
            module = module.module
        else:
            return module


def class_name(module: nn.Module, *, short: bool = False) -> str:
    """Qualified by its module unless ``short``; a scripted module reports the class it was
    scripted from."""
    if is_scripted(module):
        return f"{getattr(module, 'original_name', type(module).__name__)} (scripted)"
    return type(module).__qualname__ if short else qualified_name(type(module))


#: Public attributes that are not architecture (docs/explanation/hashes.md, "What stays out").
NOT_ARCHITECTURE: Final = frozenset(
    {"fused_attn", "inplace", "grad_checkpointing", "fix_init", "weight_init_mode", "gain_init",
     "in_chans", "attn_dim"}
)  # fmt: skip


def _attribute_value(value: object) -> object:
    """A plain attribute as JSON, or _SKIP for anything that is not configuration. Types,
    functions and enums go by name: like classes, they move between modules."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    # a subclass (numpy's float64, a str subclass) as its builtin, with the same JSON:
    # what an xdist worker sends its controller must be builtins only
    if isinstance(value, str):
        return ADDRESS.sub("0x?", str(value))
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):  # (one too long to store as a number: text, as a non-finite float)
        return hex(value) if abs(value) >= INT_BOUND else int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    if isinstance(value, (tuple, list)):
        items = [_attribute_value(v) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    if isinstance(value, (FunctionType, BuiltinFunctionType, type)):
        return str(value.__qualname__)
    import torch

    if isinstance(value, torch.dtype):
        return str(value)
    return _SKIP


def _attributes(module: nn.Module) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for name, value in vars(module).items():
        unread = name.startswith("_") or name == "training" or name in NOT_ARCHITECTURE
        if unread or value is None or value is False:
            continue
        described = _attribute_value(value)
        if described is not _SKIP:
            out[name] = described  # type: ignore[assignment]
    return out


def tensor_entries(table: Table[torch.Tensor | None]) -> list[Json]:
    from torch.nn.parameter import is_lazy

    entries: list[Json] = []
    for name, tensor in table.items():
        if tensor is None:
            entries.append([name, None])
        elif is_lazy(tensor):
            entries.append([name, "uninitialized"])
        else:
            shape: list[Json] = [int(d) for d in tensor.shape]
            entries.append([name, shape, dtype_name(tensor.dtype)])
    return entries


#: TorchScript numbers the names it mangles by how much the process scripted before.
_MANGLED: Final = re.compile(r"___torch_mangle_\d+")
#: A name with a number at its end, not an attribute: TorchScript numbers the values it names
#: (``x0``, ``input3``, ``_1``), and a module saved and loaded again is numbered anew. A string
#: literal is matched first, to be kept as it is: it is a constant of the computation.
_NUMBERED: Final = re.compile(
    r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')|(?<![\w.])([A-Za-z_][A-Za-z_]*?)(\d+)\b"
)


def canonical_code(code: str) -> str:
    """TorchScript code without what follows the process rather than the computation:
    addresses, mangling numbers, and the numbers of named values (renumbered in order of
    first use, per name)."""
    code = _MANGLED.sub("___torch_mangle", ADDRESS.sub("0x?", code))
    seen: dict[str, dict[str, int]] = {}

    def renumber(match: re.Match[str]) -> str:
        if match[1] is not None:
            return match[1]
        numbers = seen.setdefault(match[2], {})
        return f"{match[2]}#{numbers.setdefault(match[3], len(numbers))}"

    return _NUMBERED.sub(renumber, code)


def structure_node(module: nn.Module, children: list[Json]) -> dict[str, Json]:
    """One module's description (its children given as hashes): every key enters its hash
    except those in :data:`~pytest_workload._workload.modules.DESCRIPTION_ONLY`."""
    node: dict[str, Json] = {
        "class": class_name(module, short=True),
        "class_path": class_name(module),
        "attributes": _attributes(module),
        "training": module.training,
        "parameters": tensor_entries(own_parameters(module)),
        "buffers": tensor_entries(own_buffers(module)),
        "children": children,
    }
    if is_scripted(module):  # its TorchScript code is its computation, which no hook can see
        # A scripted module without forward has no code: older torch raises a RuntimeError,
        # torch 2.14 an AttributeError (a container such as torchvision's IntermediateLayerGetter).
        node["code"] = None
        with contextlib.suppress(RuntimeError, AttributeError):
            node["code"] = canonical_code(str(module.code))
    return node


def structure_hash(
    module: nn.Module,
    memo: StructureMemo | None = None,
    descriptions: MutableMapping[str, dict[str, Json]] | None = None,
) -> str:
    """The structure hash of a module tree: its architecture, never its weights.

    Example:
        Two models of one architecture share a hash whatever their weights; another width
        is another structure:

        >>> from torch import nn
        >>> a, b = nn.Linear(8, 4), nn.Linear(8, 4)
        >>> structure_hash(a) == structure_hash(b)
        True
        >>> structure_hash(a) == structure_hash(nn.Linear(8, 5))
        False
        >>> len(structure_hash(a))
        64

    What enters it (and what stays out): docs/explanation/hashes.md. It is the first part of
    a workload's key, ``[structure_hash, args, kwargs]``.

    Args:
        module: The root of the tree.
        memo: Hashes already computed, reused across calls. The plugin's own; leave it out.
        descriptions: If given, receives each module's description by its hash (give a
            fresh ``memo`` with it). The plugin's own; leave it out.

    Returns:
        The SHA-256 hex digest, 64 characters.
    """
    memo = {} if memo is None else memo
    target = unwrap(module)
    key = (id(target), target.training)
    cached = memo.get(key)
    if cached is not None and cached[0] is target:
        return cached[1]
    children: list[Json] = [
        [name, None if child is None else structure_hash(child, memo, descriptions)]
        for name, child in own_children(target).items()
    ]
    digest, description = _interned(structure_node(target, children))
    if descriptions is not None:
        descriptions[digest] = description
    memo[key] = (target, digest)
    return digest


@dataclass(frozen=True)
class FingerprintScheme:
    """One version of the rules that turn a structure hash and inputs into a workload hash
    (docs/explanation/hashes.md, "Fingerprint schemes")."""

    version: int

    def workload_hash(self, structure: str, signature: InputSignature) -> str:
        return sha256_hex(canonical_json([self.version, structure, signature.to_dict()]))


CURRENT_SCHEME: Final = FingerprintScheme(version=FINGERPRINT_SCHEME)


#: Descriptions hashed in this process, by their ``repr``. A suite's models repeat their
#: modules: each distinct description is hashed once, and every test's table holds the one
#: object, which the garbage collector would otherwise see anew per test (see
#: docs/benchmarks.md, section 12).
_INTERNED: dict[str, tuple[str, dict[str, Json]]] = {}
_INTERNED_MAX: Final = 4096


def _interned(description: dict[str, Json]) -> tuple[str, dict[str, Json]]:
    """Equal and of equal ``repr``: the same types, values and key order, so the same stored
    bytes."""
    key = repr(description)
    found = _INTERNED.get(key)
    if found is None or found[1] != description:
        if len(_INTERNED) >= _INTERNED_MAX:
            _INTERNED.clear()
        found = _INTERNED[key] = (description_hash(description), description)
    return found


def child_structure_hashes(
    module: nn.Module, memo: StructureMemo | None = None
) -> tuple[tuple[str, str], ...]:
    """For locating changes."""
    target = unwrap(module)
    return tuple(
        (name, structure_hash(child, memo))
        for name, child in own_children(target).items()
        if child is not None
    )


#: A module's subtree parameters: its distinct parameters by id, with their count, bytes and
#: dtypes (the module kept, so that its id stands).
_Params = tuple["nn.Module", dict[int, "Parameter"], int, int, frozenset[str]]
#: Each module's subtree parameters, read once per root call, by module id.
StatsMemo = MutableMapping[int, _Params]


def param_stats(module: nn.Module, memo: StatsMemo | None = None) -> ParamStats:
    """Shared parameters are counted once; ``memo`` keeps each subtree's for one root call."""
    _, _, count, size, dtypes = _subtree_params(unwrap(module), {} if memo is None else memo)
    return ParamStats(count=count, bytes=size, dtypes=tuple(sorted(dtypes)))


def _subtree_params(module: nn.Module, memo: StatsMemo) -> _Params:
    cached = memo.get(id(module))
    if cached is not None and cached[0] is module:
        return cached
    from torch.nn.parameter import is_lazy

    own = {id(p): p for p in module.parameters(recurse=False) if not is_lazy(p)}
    parts = [_subtree_params(c, memo) for c in module.children()]
    found = dict(own)
    for part in parts:
        found.update(part[1])
    # where no parameter is shared between the parts, their sums add up; else all are read
    shared = len(found) != len(own) + sum(len(part[1]) for part in parts)
    mine, rest = (found, []) if shared else (own, parts)
    count = sum(p.numel() for p in mine.values()) + sum(part[2] for part in rest)
    size = sum(p.numel() * p.element_size() for p in mine.values()) + sum(p[3] for p in rest)
    dtypes = frozenset(dtype_name(p.dtype) for p in mine.values()).union(*(p[4] for p in rest))
    memo[id(module)] = result = (module, found, count, size, dtypes)
    return result
