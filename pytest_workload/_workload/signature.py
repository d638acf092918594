"""Input signatures as data: described arguments, their readable form, workload keys."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final, cast

from .._core.codec import Record
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
class InputSignature(Record):
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
    def from_dict(cls, data: object, what: str | None = None) -> InputSignature:
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


def _check_ints(node: dict[str, Json], where: str, tag: str) -> None:
    value = node[tag]
    if not isinstance(value, list) or not all(_is_int(d) for d in value):
        raise _bad(where, f"{tag!r} must be a list of integers, got {json_type(value)}")


def _typed(*strings: str, ints: Sequence[str] = ()) -> Callable[[dict[str, Json], str], None]:
    """A check that each of ``strings`` a node holds is a string, each of ``ints`` an integer."""

    def check(node: dict[str, Json], where: str) -> None:
        for key in strings:
            if key in node and not isinstance(node[key], str):
                raise _bad(where, f"{key!r} must be a string")
        for key in ints:
            if key in node and not _is_int(node[key]):
                raise _bad(where, f"{key!r} must be an integer")

    return check


def short_type(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


def _check_shaped(node: dict[str, Json], where: str) -> None:
    _check_ints(node, where, _TENSOR_TAG if _TENSOR_TAG in node else _NDARRAY_TAG)
    _typed("dtype", "layout", "qscheme", "subclass", ints=("axis",))(node, where)


def _format_shaped(node: dict[str, Json]) -> str:
    prefix = "" if _TENSOR_TAG in node else "ndarray "
    shape = ", ".join(str(d) for d in tensor_shape(node))
    text = f"{prefix}{node['dtype']}[{shape}]"
    if "layout" in node:
        text += f" {node['layout']}"
    if "qscheme" in node:  # `` per_channel_affine(axis=0)``
        text += f" {node['qscheme']}" + (f"(axis={node['axis']})" if "axis" in node else "")
    if "subclass" in node:
        text += f" {short_type(str(node['subclass']))}"
    return text


def _diff_shaped(path: str, a: dict[str, Json], b: dict[str, Json]) -> list[str]:
    out = []
    if tensor_shape(a) != tensor_shape(b):
        out.append(f"input {path}: shape {tensor_shape(a)} -> {tensor_shape(b)}")
    for field in ("dtype", "layout", "qscheme", "axis", "subclass"):
        if a.get(field) != b.get(field):
            out.append(f"input {path}: {field} {a.get(field)} -> {b.get(field)}")
    return out


def _check_items(node: dict[str, Json], where: str) -> None:
    tag = "tuple" if "tuple" in node else "complex"
    value = node[tag]
    if not isinstance(value, list) or (tag == "complex" and len(value) != 2):
        raise _bad(where, f"{tag!r} must be a list, got {json_type(value)}")
    check_node(value, f"{where}.{tag}")


def _format_tuple(node: dict[str, Json]) -> str:
    items = cast(list[Json], node["tuple"])
    inner = ", ".join(format_node(v) for v in items)
    return f"({inner},)" if len(items) == 1 else f"({inner})"


def _check_dict(node: dict[str, Json], where: str) -> None:
    value = node["dict"]
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 for p in value):
        raise _bad(where, "'dict' must be a list of [key, value] pairs")
    check_node(value, f"{where}.dict")


def _format_dict(node: dict[str, Json]) -> str:
    pairs = cast(list[list[Json]], node["dict"])
    return "{" + ", ".join(f"{format_node(k)}: {format_node(v)}" for k, v in pairs) + "}"


#: The tags of a value described by its type's name and its fields.
_TYPED: Final = ("namedtuple", "dataclass", "builtin")


def _type_name(node: dict[str, Json]) -> Json:
    return next((node[tag] for tag in _TYPED if tag in node), None)


def _check_fields(node: dict[str, Json], where: str) -> None:
    fields = node["fields"]
    if not isinstance(_type_name(node), str) or not isinstance(fields, dict):
        tag = next(t for t in _TYPED if t in node)
        raise _bad(where, f"{tag!r} must be a type name with an object of 'fields'")
    for name, field in fields.items():
        check_node(field, f"{where}.{name}")


def _format_fields(node: dict[str, Json]) -> str:
    fields = cast(dict[str, Json], node["fields"])
    inner = ", ".join(f"{k}={format_node(v)}" for k, v in fields.items())
    return f"{short_type(str(_type_name(node)))}({inner})"


def _diff_fields(path: str, a: dict[str, Json], b: dict[str, Json]) -> list[str]:
    """Field by field, for two values of one type with the same fields."""
    fa, fb = a["fields"], b["fields"]
    assert isinstance(fa, dict) and isinstance(fb, dict)
    if a.keys() != b.keys() or fa.keys() != fb.keys() or _type_name(a) != _type_name(b):
        return []
    return [line for k in fa for line in diff_node(f"{path}.{k}", fa[k], fb[k])]


def _check_numpy(node: dict[str, Json], where: str) -> None:
    _typed("numpy")(node, where)
    check_node(node["value"], f"{where}.value")


def _format_plain(value: Json) -> str:
    """A user's own JSON (a custom description), which has no tags to read."""
    if isinstance(value, list):
        return f"[{', '.join(_format_plain(v) for v in value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_format_plain(v)}" for k, v in value.items()) + "}"
    return repr(value)


@dataclass(frozen=True)
class Tag:
    """One kind of tagged input description (``{"tensor": [1, 3], "dtype": "float32"}``).

    ``keys``: its required keys (the tag first); ``optional``: the others it may hold;
    ``check`` raises naming ``where`` unless its own fields are as the describer writes them
    (nested descriptions through :func:`check_node`); ``format``: its readable form; ``diff``:
    the finer lines of a change between two of its kind (empty: say the whole value changed);
    ``shaped``: a tensor-like value whose shape the distance factor scales."""

    keys: tuple[str, ...]
    check: Callable[[dict[str, Json], str], None]
    format: Callable[[dict[str, Json]], str]
    optional: frozenset[str] = frozenset()
    diff: Callable[[str, dict[str, Json], dict[str, Json]], list[str]] | None = None
    shaped: bool = False

    @property
    def name(self) -> str:
        return self.keys[0]

    def fits(self, node: dict[str, Json]) -> bool:
        required = frozenset(self.keys)
        return self.name in node and required <= node.keys() <= required | self.optional


#: Every tag an input description may carry, one entry each.
TAGS = (
    *(
        Tag((tag, "dtype"), _check_shaped, _format_shaped, optional, _diff_shaped, shaped=True)
        for tag, optional in (
            (_TENSOR_TAG, frozenset({"layout", "qscheme", "axis", "subclass"})),
            (_NDARRAY_TAG, frozenset({"layout"})),
        )
    ),
    Tag(
        ("tuple",),
        _check_items,
        _format_tuple,
        diff=lambda p, a, b: diff_node(p, a["tuple"], b["tuple"]),
    ),
    Tag(("dict",), _check_dict, _format_dict),
    *(Tag((tag, "fields"), _check_fields, _format_fields, diff=_diff_fields) for tag in _TYPED),
    Tag(("enum",), _typed("enum"), lambda n: ".".join(str(n["enum"]).rsplit(".", 2)[-2:])),
    Tag(("dtype",), _typed("dtype"), lambda n: f"torch.{n['dtype']}"),
    Tag(
        ("size",),
        lambda n, w: _check_ints(n, w, "size"),
        lambda n: f"torch.Size({format_node(n['size'])})",
    ),
    Tag(("device",), _typed("device"), lambda n: "<device>"),
    Tag(("float",), _typed("float"), lambda n: str(n["float"])),
    Tag(("numpy", "value"), _check_numpy, lambda n: f"np.{n['numpy']}({format_node(n['value'])})"),
    Tag(("complex",), _check_items, lambda n: f"complex{format_node(n['complex'])}"),
    Tag(
        ("custom", "value"),
        _typed("custom"),
        lambda n: f"{short_type(str(n['custom']))}<{_format_plain(n['value'])}>",
    ),
    Tag(
        ("str_sha256", "length", "preview"),
        _typed("str_sha256", "preview", ints=("length",)),
        lambda n: f"{n['preview']!r}… ({n['length']} characters, sha256 {n['str_sha256']:.8})",
    ),
)
#: The tags of shaped values, which the distance factor scales.
SHAPED_TAGS = tuple(t.name for t in TAGS if t.shaped)


def tag_of(node: dict[str, Json]) -> Tag | None:
    """The tag ``node`` is described with; None where it is none (not a description)."""
    return next((t for t in TAGS if t.fits(node)), None)


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
    tag = tag_of(node)
    if tag is None:
        raise _bad(where, f"not an input description (keys {sorted(node)})")
    tag.check(node, where)


def format_node(node: Json) -> str:
    if isinstance(node, list):
        return f"[{', '.join(format_node(v) for v in node)}]"
    tag = tag_of(node) if isinstance(node, dict) else None
    return tag.format(node) if tag is not None and isinstance(node, dict) else repr(node)


def diff_node(path: str, a: Json, b: Json) -> list[str]:
    """One line per part of a described value that differs, e.g. ``input args[0]: shape
    [1, 3] -> [2, 3]``: shaped values field by field, lists and tuples of one length and
    values of one type item by item, anything else whole."""
    if canonical_json(a) == canonical_json(b):
        return []
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            line
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for line in diff_node(f"{path}[{i}]", x, y)
        ]
    if isinstance(a, dict) and isinstance(b, dict):
        ta, tb = tag_of(a), tag_of(b)
        if ta is not None and tb is not None and (ta is tb or (ta.shaped and tb.shaped)):
            lines = ta.diff(path, a, b) if ta.diff is not None else []
            if lines:
                return lines
    return [f"input {path}: {format_node(a)} -> {format_node(b)}"]


def is_tensor_node(node: Json) -> bool:
    """Whether a described value is a tensor or array (shape plus dtype)."""
    return isinstance(node, dict) and any(tag in node for tag in SHAPED_TAGS)


def tensor_shape(node: dict[str, Json]) -> list[Json]:
    return cast(list[Json], next(node[tag] for tag in SHAPED_TAGS if tag in node))


def workload_key(structure: str, signature: InputSignature) -> list[Json]:
    """``[structure_hash, args, kwargs]``: a key that keeps structure apart from shapes."""
    return [structure, list(signature.args), dict(signature.kwargs)]
