"""Input signatures: the call-argument half of a workload's identity, never by value (but for
scalars), device, ``id()`` or address (docs/explanation/hashes.md, "Input signature").
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import math
import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeGuard

from .._core.errors import UndescribableInputError
from .._core.strict_json import (
    INT_BOUND,
    MAX_INPUT_DEPTH,
    MAX_INT_DIGITS,
    Json,
    canonical_json,
    out_of_bounds,
)
from .._workload.signature import _NDARRAY_TAG, _TENSOR_TAG, dtype_name, qualified_name
from .ecosystem import describe_known

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: Strings longer than this are described by digest, length and preview, so that a 1 MB
#: argument is not stored in every snapshot and report.
LONG_STRING: Final = 1024
STRING_PREVIEW: Final = 64

#: A user-supplied describer: returns a JSON description of a value, or None to decline.
Describer: TypeAlias = Callable[[object], "Json | None"]


def _describe_tensor(value: Any, path: str, torch: Any) -> Json:
    try:
        shape: list[Json] = [int(d) for d in value.shape]
    except Exception as exc:  # nested and symbolic tensors fail in many ways
        reason = f"its shape is not concrete ({exc})"
        raise UndescribableInputError(path, type(value), reason) from None
    node: dict[str, Json] = {_TENSOR_TAG: shape, "dtype": dtype_name(value.dtype)}
    layout = dtype_name(value.layout)
    if layout != "strided":
        node["layout"] = layout
    if value.is_quantized:
        # per-tensor and per-channel quantized tensors of one dtype run different kernels
        qscheme = value.qscheme()
        node["qscheme"] = dtype_name(qscheme)
        if qscheme in (torch.per_channel_affine, torch.per_channel_symmetric):
            node["axis"] = int(value.q_per_channel_axis())
    cls = type(value)
    if cls is not torch.Tensor and not issubclass(cls, torch.nn.Parameter):
        node["subclass"] = qualified_name(cls)  # its __torch_function__ may run anything
    return node


def _describe_str(value: str, path: str) -> Json:
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        reason = f"it is not valid Unicode (a lone surrogate at index {exc.start})"
        raise UndescribableInputError(path, type(value), reason) from None
    if len(value) <= LONG_STRING:
        return str(value)
    digest = hashlib.sha256(encoded).hexdigest()
    return {"str_sha256": digest, "length": len(value), "preview": value[:STRING_PREVIEW]}


def _describe_float(value: float) -> Json:
    return float(value) if math.isfinite(value) else {"float": repr(float(value))}


def _ask(custom: Describer, value: object, path: str) -> Json:
    """Checked to be JSON here, where the argument path is known."""
    try:
        described = custom(value)
    except (Exception, SystemExit) as exc:  # a hook's sys.exit() is its own failure
        reason = f"pytest_workload_describe failed: {exc!r}"
        raise UndescribableInputError(path, type(value), reason) from None
    try:
        canonical_json(described)
    except (TypeError, ValueError) as exc:
        returned = qualified_name(type(described))
        reason = f"pytest_workload_describe returned {returned}, which is not JSON ({exc})"
        raise UndescribableInputError(path, type(value), reason) from None
    refused = out_of_bounds(described, MAX_INPUT_DEPTH)
    if refused is not None:
        reason = f"pytest_workload_describe returned {refused}, which no snapshot may hold"
        raise UndescribableInputError(path, type(value), reason)
    return described


def _is_dataclass_instance(value: object) -> TypeGuard[DataclassInstance]:
    # is_dataclass is also true of a dataclass's class, which has no field values to describe
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _describer(custom: Describer | None) -> Callable[[object, str], Json]:
    on_path: set[int] = set()
    # Only what the caller already imported can appear in its arguments.
    torch = sys.modules.get("torch")
    np = sys.modules.get("numpy")

    def describe(value: object, path: str) -> Json:
        if torch is not None and isinstance(value, torch.Tensor):  # the common case, first
            return _describe_tensor(value, path, torch)
        # before Python scalars, which some numpy scalars subclass (float64, str_)
        if np is not None and isinstance(value, np.generic):
            return {"numpy": str(value.dtype), "value": describe(value.item(), path)}
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, enum.Enum):
            return {"enum": f"{qualified_name(type(value))}.{value.name}"}
        if isinstance(value, str):
            return _describe_str(value, path)
        if isinstance(value, int):
            if abs(value) >= INT_BOUND:  # compared, not printed: str() of 10**5000 itself fails
                reason = f"integers of more than {MAX_INT_DIGITS} digits are not described"
                raise UndescribableInputError(path, type(value), reason)
            return int(value)
        if isinstance(value, float):
            return _describe_float(value)
        if isinstance(value, complex):
            return {"complex": [_describe_float(value.real), _describe_float(value.imag)]}
        if torch is not None:
            if isinstance(value, torch.Size):  # a tuple subclass, told apart from a tuple
                return {"size": [int(d) for d in value]}
            if isinstance(value, torch.dtype):
                return {"dtype": dtype_name(value)}
            if isinstance(value, torch.device):
                # A device argument is placement, not identity: CPU and CUDA share a hash.
                return {"device": "any"}
        if np is not None and isinstance(value, np.ndarray):
            return {_NDARRAY_TAG: [int(d) for d in value.shape], "dtype": str(value.dtype)}
        if isinstance(value, (list, tuple, dict)) or _is_dataclass_instance(value):
            if id(value) in on_path:
                raise UndescribableInputError(path, type(value), "it contains itself")
            if len(on_path) >= MAX_INPUT_DEPTH:
                reason = f"containers nested more than {MAX_INPUT_DEPTH} deep are not described"
                raise UndescribableInputError(path, type(value), reason)
            on_path.add(id(value))
            try:
                return container(value, path)
            finally:
                on_path.discard(id(value))
        if custom is not None:
            answer = _ask(custom, value, path)
            if answer is not None:
                return {"custom": qualified_name(type(value)), "value": answer}
        known = describe_known(value, describe, path)
        if known is not None:
            return known
        raise UndescribableInputError(path, type(value))

    def container(value: object, path: str) -> Json:
        names: tuple[str, ...]
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            kind, names = "namedtuple", type(value)._fields  # type: ignore[attr-defined]
        elif _is_dataclass_instance(value):
            kind, names = "dataclass", tuple(f.name for f in dataclasses.fields(value))
        elif isinstance(value, tuple):
            return {"tuple": [describe(v, f"{path}[{i}]") for i, v in enumerate(value)]}
        elif isinstance(value, list):
            return [describe(v, f"{path}[{i}]") for i, v in enumerate(value)]
        else:
            assert isinstance(value, dict)
            pairs = [
                (describe(k, f"{path} key {k!r}"), describe(v, f"{path}[{k!r}]"))
                for k, v in value.items()
            ]
            # insertion order is not identity: a dict built from a set changes it per hash seed
            pairs.sort(key=lambda pair: canonical_json(pair[0]))
            return {"dict": [[k, v] for k, v in pairs]}
        fields = {f: describe(getattr(value, f), f"{path}.{f}") for f in names}
        return {kind: qualified_name(type(value)), "fields": fields}

    return describe


def describe_args(args: Sequence[object], custom: Describer | None = None) -> tuple[Json, ...]:
    describe = _describer(custom)
    return tuple(describe(v, f"args[{i}]") for i, v in enumerate(args))


def describe_kwargs(
    kwargs: Mapping[str, object], custom: Describer | None = None
) -> tuple[tuple[str, Json], ...]:
    """Sorted by name: call order does not change a workload."""
    describe = _describer(custom)
    return tuple((k, describe(kwargs[k], f"kwargs[{k!r}]")) for k in sorted(kwargs))


#: Argument types whose value is their description (``float`` is keyed by ``hex()``, which
#: tells ``-0.0`` from ``0.0`` as the canonical JSON does).
_SCALARS: Final = frozenset({bool, int, str, type(None)})


def inputs_key(
    args: Sequence[Any], kwargs: Mapping[str, object], depth: int = 0
) -> Hashable | None:
    """A process-local key of a call's inputs: two calls with equal keys have equal
    descriptions. None where only describing the inputs can tell (anything but plain tensors,
    Python scalars, and tuples and lists of them, keyed at ``depth`` + 1). A few attribute
    reads per argument, so a repeated call is recognised without describing it again."""
    torch = sys.modules["torch"]  # (a module is being called)
    names = tuple(sorted(kwargs)) if kwargs else ()
    values = (*args, *map(kwargs.__getitem__, names)) if kwargs else args
    keys: list[Hashable] = []
    for value in values:
        cls = type(value)
        if cls is torch.Tensor:
            try:
                if value.is_quantized:  # (its scheme is described)
                    return None
                keys.append((value.shape, value.dtype, value.layout))
            except RuntimeError:  # a nested tensor has no sizes
                return None
        elif cls in _SCALARS:
            keys.append((cls, value))
        elif cls is float:
            keys.append((cls, value.hex()))
        elif (cls is tuple or cls is list) and depth < MAX_INPUT_DEPTH:
            items = inputs_key(value, {}, depth + 1)
            if items is None:
                return None
            keys.append((cls, items))
        else:
            return None
    return (len(args), names, tuple(keys))
