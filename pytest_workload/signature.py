"""Input signatures: the call-argument half of a workload's identity.

Arguments become canonical JSON nodes. Tensors and arrays are described by shape and dtype,
never by value or device; plain scalars by value, so ``use_cache=True`` and ``use_cache=False``
are two workloads. Containers keep their type and boundaries. Nothing is ever described by
``id()`` or address: an object this module cannot describe is an error naming its path.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeGuard

from .canonical import canonical_json
from .errors import UndescribableInputError, WorkloadDataError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Json: TypeAlias = "bool | int | float | str | list[Json] | dict[str, Json] | None"

#: A user-supplied describer: returns a JSON description of a value, or None to decline.
Describer: TypeAlias = Callable[[object], "Json | None"]

_TENSOR_TAG: Final = "tensor"
_NDARRAY_TAG: Final = "ndarray"


def qualified_name(cls: type) -> str:
    """``module.QualName`` of a class, the form used everywhere a type is named."""
    return f"{cls.__module__}.{cls.__qualname__}"


def dtype_name(dtype: object) -> str:
    """``float32`` for ``torch.float32``: how dtypes (and layouts) are written everywhere."""
    return str(dtype).removeprefix("torch.")


def _describe_tensor(value: Any, path: str) -> Json:
    try:
        shape: list[Json] = [int(d) for d in value.shape]
    except (RuntimeError, TypeError) as exc:
        reason = f"its shape is not concrete ({exc})"
        raise UndescribableInputError(path, type(value), reason) from None
    node: dict[str, Json] = {_TENSOR_TAG: shape, "dtype": dtype_name(value.dtype)}
    layout = dtype_name(value.layout)
    if layout != "strided":
        node["layout"] = layout
    return node


def _describe_float(value: float) -> Json:
    return float(value) if math.isfinite(value) else {"float": repr(float(value))}


def _ask(custom: Describer, value: object, path: str) -> Json:
    """The user's description, checked to be JSON here, where the argument path is known."""
    try:
        described = custom(value)
    except Exception as exc:
        reason = f"pytest_workload_describe failed: {exc!r}"
        raise UndescribableInputError(path, type(value), reason) from None
    try:
        canonical_json(described)
    except (TypeError, ValueError) as exc:
        returned = qualified_name(type(described))
        reason = f"pytest_workload_describe returned {returned}, which is not JSON ({exc})"
        raise UndescribableInputError(path, type(value), reason) from None
    return described


def _is_dataclass_instance(value: object) -> TypeGuard[DataclassInstance]:
    # is_dataclass is also true of a dataclass's class, which has no field values to describe
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


class _Describer:
    __slots__ = ("_custom", "_np", "_on_path", "_torch")

    def __init__(self, custom: Describer | None) -> None:
        self._custom = custom
        self._on_path: set[int] = set()
        # Only what the caller already imported can appear in its arguments.
        self._torch = sys.modules.get("torch")
        self._np = sys.modules.get("numpy")

    def describe(self, value: object, path: str) -> Json:
        torch = self._torch
        if torch is not None and isinstance(value, torch.Tensor):  # the common case, first
            return _describe_tensor(value, path)
        np = self._np
        # before Python scalars, which some numpy scalars subclass (float64, str_)
        if np is not None and isinstance(value, np.generic):
            return {"numpy": str(value.dtype), "value": self.describe(value.item(), path)}
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, enum.Enum):
            return {"enum": f"{qualified_name(type(value))}.{value.name}"}
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return _describe_float(value)
        if isinstance(value, complex):
            return {"complex": [_describe_float(value.real), _describe_float(value.imag)]}
        if torch is not None:
            if isinstance(value, torch.dtype):
                return {"dtype": dtype_name(value)}
            if isinstance(value, torch.device):
                # A device argument is placement, not identity: CPU and CUDA share a hash.
                return {"device": "any"}
        if np is not None and isinstance(value, np.ndarray):
            return {_NDARRAY_TAG: [int(d) for d in value.shape], "dtype": str(value.dtype)}
        return self._describe_composite(value, path)

    def _describe_composite(self, value: object, path: str) -> Json:
        if isinstance(value, (list, tuple, dict)) or _is_dataclass_instance(value):
            if id(value) in self._on_path:
                raise UndescribableInputError(path, type(value), "it contains itself")
            self._on_path.add(id(value))
            try:
                return self._describe_container(value, path)
            finally:
                self._on_path.discard(id(value))
        if self._custom is not None:
            custom = _ask(self._custom, value, path)
            if custom is not None:
                return {"custom": qualified_name(type(value)), "value": custom}
        raise UndescribableInputError(path, type(value))

    def _describe_container(self, value: object, path: str) -> Json:
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            names: tuple[str, ...] = type(value)._fields  # type: ignore[attr-defined]
            fields = {f: self.describe(getattr(value, f), f"{path}.{f}") for f in names}
            return {"namedtuple": qualified_name(type(value)), "fields": fields}
        if _is_dataclass_instance(value):
            fields = {
                f.name: self.describe(getattr(value, f.name), f"{path}.{f.name}")
                for f in dataclasses.fields(value)
            }
            return {"dataclass": qualified_name(type(value)), "fields": fields}
        if isinstance(value, tuple):
            return {"tuple": [self.describe(v, f"{path}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.describe(v, f"{path}[{i}]") for i, v in enumerate(value)]
        assert isinstance(value, dict)
        return {
            "dict": [
                [self.describe(k, f"{path} key {k!r}"), self.describe(v, f"{path}[{k!r}]")]
                for k, v in value.items()
            ]
        }


def describe_args(args: Sequence[object], custom: Describer | None = None) -> tuple[Json, ...]:
    """Describe positional arguments; raises UndescribableInputError naming ``args[i]...``."""
    describer = _Describer(custom)
    return tuple(describer.describe(v, f"args[{i}]") for i, v in enumerate(args))


def describe_kwargs(
    kwargs: Mapping[str, object], custom: Describer | None = None
) -> tuple[tuple[str, Json], ...]:
    """Describe keyword arguments, sorted by name (call order does not change a workload)."""
    describer = _Describer(custom)
    return tuple((k, describer.describe(kwargs[k], f"kwargs[{k!r}]")) for k in sorted(kwargs))


@dataclass(frozen=True, eq=False)
class InputSignature:
    """Positional and keyword argument descriptions of one call.

    Equality and hashing go through the canonical JSON form, where ``True``, ``1`` and ``1.0``
    are three different values (as they are three different workloads).
    """

    args: tuple[Json, ...]
    kwargs: tuple[tuple[str, Json], ...] = ()

    @cached_property
    def canonical(self) -> str:
        return canonical_json(self.to_dict())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InputSignature) and self.canonical == other.canonical

    def __hash__(self) -> int:
        return hash(self.canonical)

    def to_dict(self) -> dict[str, Json]:
        return {"args": list(self.args), "kwargs": dict(self.kwargs)}

    @classmethod
    def from_dict(cls, data: object) -> InputSignature:
        if not isinstance(data, dict) or set(data) != {"args", "kwargs"}:
            raise WorkloadDataError("input_signature must be an object with 'args' and 'kwargs'")
        args, kwargs = data["args"], data["kwargs"]
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise WorkloadDataError("input_signature args must be a list and kwargs an object")
        return cls(args=tuple(args), kwargs=tuple(sorted(kwargs.items())))

    def format(self) -> str:
        """Readable one-line form, e.g. ``(float32[1, 3, 28, 28], use_cache=True)``."""
        parts = [format_node(a) for a in self.args]
        parts += [f"{k}={format_node(v)}" for k, v in self.kwargs]
        return f"({', '.join(parts)})"


def _short_type(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


def format_node(node: Json) -> str:
    """Readable form of one described value."""
    if isinstance(node, list):
        return f"[{', '.join(format_node(v) for v in node)}]"
    if not isinstance(node, dict):
        return repr(node)
    if _TENSOR_TAG in node or _NDARRAY_TAG in node:
        tag = _TENSOR_TAG if _TENSOR_TAG in node else _NDARRAY_TAG
        shape = node[tag]
        assert isinstance(shape, list)
        prefix = "ndarray " if tag == _NDARRAY_TAG else ""
        layout = f" {node['layout']}" if "layout" in node else ""
        return f"{prefix}{node['dtype']}[{', '.join(str(d) for d in shape)}]{layout}"
    return _format_tagged(node)


def _format_tagged(node: dict[str, Json]) -> str:
    if "tuple" in node:
        items = node["tuple"]
        assert isinstance(items, list)
        inner = ", ".join(format_node(v) for v in items)
        return f"({inner},)" if len(items) == 1 else f"({inner})"
    if "dict" in node:
        pairs = node["dict"]
        assert isinstance(pairs, list)
        return "{" + ", ".join(_format_pair(p) for p in pairs) + "}"
    if "fields" in node:
        fields = node["fields"]
        assert isinstance(fields, dict)
        cls = node.get("namedtuple", node.get("dataclass"))
        inner = ", ".join(f"{k}={format_node(v)}" for k, v in fields.items())
        return f"{_short_type(str(cls))}({inner})"
    if "enum" in node:
        return ".".join(str(node["enum"]).rsplit(".", 2)[-2:])
    if "dtype" in node:
        return f"torch.{node['dtype']}"
    if "device" in node:
        return "<device>"
    if "float" in node:
        return str(node["float"])
    if "numpy" in node:
        return f"np.{node['numpy']}({format_node(node['value'])})"
    if "complex" in node:
        return f"complex{format_node(node['complex'])}"
    if "custom" in node:
        return f"{_short_type(str(node['custom']))}<{format_node(node['value'])}>"
    return repr(node)


def _format_pair(pair: Json) -> str:
    assert isinstance(pair, list) and len(pair) == 2
    return f"{format_node(pair[0])}: {format_node(pair[1])}"


def label_arg(path: str, arg_names: Sequence[str]) -> str:
    """``args[0]...`` becomes ``args[0] (x)...`` when the forward's parameter name is known."""
    if path.startswith("args[") and "]" in path:
        index = int(path[5 : path.index("]")])
        if index < len(arg_names):
            return (
                f"{path[: path.index(']') + 1]} ({arg_names[index]}){path[path.index(']') + 1 :]}"
            )
    return path


def is_tensor_node(node: Json) -> bool:
    """Whether a described value is a tensor or array (shape plus dtype)."""
    return isinstance(node, dict) and (_TENSOR_TAG in node or _NDARRAY_TAG in node)


def tensor_shape(node: Json) -> list[Json]:
    """The shape list of a tensor or array node."""
    assert isinstance(node, dict)
    shape = node.get(_TENSOR_TAG, node.get(_NDARRAY_TAG))
    assert isinstance(shape, list)
    return shape
