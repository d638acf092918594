"""Input signatures as data: described arguments, their readable form, workload keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final

from .canonical import Json, canonical_json
from .errors import WorkloadDataError

_TENSOR_TAG: Final = "tensor"


_NDARRAY_TAG: Final = "ndarray"


def qualified_name(cls: type) -> str:
    """``module.QualName`` of a class, the form used everywhere a type is named."""
    return f"{cls.__module__}.{cls.__qualname__}"


def dtype_name(dtype: object) -> str:
    """``float32`` for ``torch.float32``: how dtypes (and layouts) are written everywhere."""
    return str(dtype).removeprefix("torch.")


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
        cls = node.get("namedtuple", node.get("dataclass", node.get("builtin")))
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


def workload_key(structure: str, signature: InputSignature) -> list[Json]:
    """``[structure_hash, args, kwargs]``: a key that keeps structure apart from shapes."""
    sig = signature.to_dict()
    return [structure, sig["args"], sig["kwargs"]]
