"""Input signatures as data: described arguments, their readable form, workload keys."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final

from .._core.errors import WorkloadDataError
from .._core.strict_json import Json, canonical_json

#: The tags of a described tensor and of a described array, each beside its ``dtype``.
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
    """The arguments of one call as described, as ``Workload.input_signature`` holds them.

    A tensor or an array is described by its shape and dtype, every other value by value.
    Equality and hashing go through the canonical JSON form, where ``True``, ``1`` and ``1.0``
    are three different values (as they are three different workloads).

    Example:
        ``InputSignature(args=({"tensor": [1, 3], "dtype": "float32"},), kwargs=(("use_cache",
        True),)).format()`` is ``"(float32[1, 3], use_cache=True)"``.

    Attributes:
        args: Each positional argument's description.
        kwargs: ``(name, description)`` of each keyword argument, sorted by name.
    """

    args: tuple[Json, ...]
    kwargs: tuple[tuple[str, Json], ...] = ()

    @cached_property
    def canonical(self) -> str:
        """The canonical JSON of ``to_dict()``, which equality and hashing compare."""
        return canonical_json(self.to_dict())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InputSignature) and self.canonical == other.canonical

    def __hash__(self) -> int:
        return hash(self.canonical)

    def to_dict(self) -> dict[str, Json]:
        """The signature as the JSON report holds it: ``{"args": [...], "kwargs": {...}}``."""
        return {"args": list(self.args), "kwargs": dict(self.kwargs)}

    @classmethod
    def from_dict(cls, data: object) -> InputSignature:
        """The signature from parsed JSON; malformed data raises ``WorkloadError``."""
        if not isinstance(data, dict) or set(data) != {"args", "kwargs"}:
            raise WorkloadDataError("input_signature must be an object with 'args' and 'kwargs'")
        args, kwargs = data["args"], data["kwargs"]
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise WorkloadDataError("input_signature args must be a list and kwargs an object")
        for i, arg in enumerate(args):
            check_node(arg, f"input_signature args[{i}]")
        for name, kwarg in kwargs.items():
            check_node(kwarg, f"input_signature kwargs[{name!r}]")
        return cls(args=tuple(args), kwargs=tuple(sorted(kwargs.items())))

    def format(self) -> str:
        """Readable one-line form, e.g. ``(float32[1, 3, 28, 28], use_cache=True)``."""
        parts = [format_node(a) for a in self.args]
        parts += [f"{k}={format_node(v)}" for k, v in self.kwargs]
        return f"({', '.join(parts)})"


def _bad(where: str, what: str) -> WorkloadDataError:
    return WorkloadDataError(f"{where}: {what}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def json_type(value: object) -> str:
    """How a JSON value's type is named in messages."""
    return "null" if value is None else type(value).__name__


#: Tagged nodes: their required keys (the tag first) and optional ones.
_TAGS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    _TENSOR_TAG: (
        frozenset({_TENSOR_TAG, "dtype"}),
        frozenset({"layout", "qscheme", "axis", "subclass"}),
    ),
    _NDARRAY_TAG: (frozenset({_NDARRAY_TAG, "dtype"}), frozenset({"layout"})),
    "tuple": (frozenset({"tuple"}), frozenset()),
    "dict": (frozenset({"dict"}), frozenset()),
    "namedtuple": (frozenset({"namedtuple", "fields"}), frozenset()),
    "dataclass": (frozenset({"dataclass", "fields"}), frozenset()),
    "builtin": (frozenset({"builtin", "fields"}), frozenset()),
    "enum": (frozenset({"enum"}), frozenset()),
    "dtype": (frozenset({"dtype"}), frozenset()),
    "size": (frozenset({"size"}), frozenset()),
    "device": (frozenset({"device"}), frozenset()),
    "float": (frozenset({"float"}), frozenset()),
    "numpy": (frozenset({"numpy", "value"}), frozenset()),
    "complex": (frozenset({"complex"}), frozenset()),
    "custom": (frozenset({"custom", "value"}), frozenset()),
    "str_sha256": (frozenset({"str_sha256", "length", "preview"}), frozenset()),
}


def _tag(node: dict[str, Json], where: str) -> str:
    for tag, (required, optional) in _TAGS.items():
        if tag in node and required <= node.keys() <= required | optional:
            return tag
    raise _bad(where, f"not an input description (keys {sorted(node)})")


def check_node(node: object, where: str) -> None:
    """Raise a WorkloadDataError naming ``where`` unless ``node`` is a described value as the
    describer writes it: read files are checked before anything formats or compares them."""
    if node is None or isinstance(node, (bool, int, str)):
        return
    if isinstance(node, float):
        if not math.isfinite(node):
            raise _bad(where, "a number that is not finite")
        return
    if isinstance(node, list):
        for i, item in enumerate(node):
            check_node(item, f"{where}[{i}]")
        return
    if not isinstance(node, dict):
        raise _bad(where, f"not an input description ({json_type(node)})")
    _check_tagged(node, _tag(node, where), where)


def _check_tagged(node: dict[str, Json], tag: str, where: str) -> None:
    value = node[tag]
    if tag in (_TENSOR_TAG, _NDARRAY_TAG, "size"):
        if not isinstance(value, list) or not all(_is_int(d) for d in value):
            raise _bad(where, f"{tag!r} must be a list of integers, got {json_type(value)}")
    elif tag == "tuple" or tag == "complex":
        if not isinstance(value, list) or (tag == "complex" and len(value) != 2):
            raise _bad(where, f"{tag!r} must be a list, got {json_type(value)}")
        check_node(value, f"{where}.{tag}")
    elif tag == "dict":
        if not isinstance(value, list) or not all(
            isinstance(p, list) and len(p) == 2 for p in value
        ):
            raise _bad(where, "'dict' must be a list of [key, value] pairs")
        check_node(value, f"{where}.dict")
    elif tag in ("namedtuple", "dataclass", "builtin"):
        fields = node["fields"]
        if not isinstance(value, str) or not isinstance(fields, dict):
            raise _bad(where, f"{tag!r} must be a type name with an object of 'fields'")
        for name, field in fields.items():
            check_node(field, f"{where}.{name}")
    elif not isinstance(value, str):
        raise _bad(where, f"{tag!r} must be a string")
    for key in ("dtype", "layout", "qscheme", "subclass", "preview"):
        if key in node and not isinstance(node[key], str):
            raise _bad(where, f"{key!r} must be a string")
    for key in ("axis", "length"):
        if key in node and not _is_int(node[key]):
            raise _bad(where, f"{key!r} must be an integer")
    if tag == "numpy":
        check_node(node["value"], f"{where}.value")


def _short_type(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


def format_node(node: Json) -> str:
    """Readable form of one described value."""
    if isinstance(node, list):
        return f"[{', '.join(format_node(v) for v in node)}]"
    if not isinstance(node, dict):
        return repr(node)
    if is_tensor_node(node):
        prefix = "" if _TENSOR_TAG in node else "ndarray "
        shape = ", ".join(str(d) for d in tensor_shape(node))
        text = f"{prefix}{node['dtype']}[{shape}]"
        if "layout" in node:
            text += f" {node['layout']}"
        if "qscheme" in node:  # `` per_channel_affine(axis=0)``
            text += f" {node['qscheme']}" + (f"(axis={node['axis']})" if "axis" in node else "")
        if "subclass" in node:
            text += f" {_short_type(str(node['subclass']))}"
        return text
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
    if "size" in node:
        return f"torch.Size({format_node(node['size'])})"
    if "device" in node:
        return "<device>"
    if "float" in node:
        return str(node["float"])
    if "numpy" in node:
        return f"np.{node['numpy']}({format_node(node['value'])})"
    if "complex" in node:
        return f"complex{format_node(node['complex'])}"
    if "custom" in node:
        return f"{_short_type(str(node['custom']))}<{_format_plain(node['value'])}>"
    if "str_sha256" in node:
        digest = str(node["str_sha256"])[:8]
        return f"{node['preview']!r}… ({node['length']} characters, sha256 {digest})"
    return repr(node)


def _format_plain(value: Json) -> str:
    """A user's own JSON (a custom description), which has no tags to read."""
    if isinstance(value, list):
        return f"[{', '.join(_format_plain(v) for v in value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_format_plain(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _format_pair(pair: Json) -> str:
    assert isinstance(pair, list) and len(pair) == 2
    return f"{format_node(pair[0])}: {format_node(pair[1])}"


def label_arg(path: str, arg_names: Sequence[str]) -> str:
    """``args[0]...`` becomes ``args[0] (x)...`` when the forward's parameter name is known."""
    if path.startswith("args[") and "]" in path:
        end = path.index("]") + 1
        index = int(path[5 : end - 1])
        if index < len(arg_names):
            return f"{path[:end]} ({arg_names[index]}){path[end:]}"
    return path


def is_tensor_node(node: Json) -> bool:
    """Whether a described value is a tensor or array (shape plus dtype)."""
    return isinstance(node, dict) and (_TENSOR_TAG in node or _NDARRAY_TAG in node)


def tensor_shape(node: Json) -> list[Json]:
    assert isinstance(node, dict)
    shape = node.get(_TENSOR_TAG, node.get(_NDARRAY_TAG))
    assert isinstance(shape, list)
    return shape


def workload_key(structure: str, signature: InputSignature) -> list[Json]:
    """``[structure_hash, args, kwargs]``: a key that keeps structure apart from shapes."""
    return [structure, list(signature.args), dict(signature.kwargs)]
