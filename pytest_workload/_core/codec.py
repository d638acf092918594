"""A record's JSON form, derived once from its dataclass fields and their types.

A frozen dataclass that derives from :class:`Record` is written and read field by field, in
field order, each by its type (``int``, ``float``, ``str``, ``bool``, ``Literal``, ``X | None``,
tuples, nested records, ``Json``); a field's :func:`codec` declares where it differs
(:class:`Spec`). Every value goes through the bounded readers of :mod:`.strict_json`, so a bad
field is one clear line that names it. The snapshot form (``to_snapshot``) leaves out what
depends on the run (timings, call counts, call sites: ``snapshot=False``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, TypeVar, Union

from .errors import FutureFormatError, OldFormatError, WorkloadDataError
from .strict_json import Json, canonical_json, read_count, read_field, read_object


@dataclass(frozen=True)
class Spec:
    """How one field differs from what its type gives."""

    #: Its name in JSON (``class`` for ``class_name``).
    key: str | None = None
    #: The least integer it may hold (a count, a size).
    minimum: int | None = None
    #: Left out of the JSON when it holds its default, and read as the default when absent.
    omit: bool = False
    #: Reads the field from the whole object (an odd field may depend on its neighbours).
    read: Callable[[Mapping[str, Any]], Any] | None = None
    #: Writes the value (None is written as null, or left out with ``omit``).
    write: Callable[[Any], Json] | None = None
    #: Neither written nor read (a value for this process only).
    skip: bool = False
    #: Kept in the snapshot form (False: the report's only; a snapshot's record holds the
    #: default, which the field must have).
    snapshot: bool = True
    #: Its written object's keys are the record's own, beside its other fields (with ``read``
    #: given the whole object).
    flatten: bool = False


def codec(**how: Any) -> dict[str, Spec]:
    """A field's metadata that declares how it differs: ``field(metadata=codec(key="class"))``."""
    return {"codec": Spec(**how)}


@dataclass(frozen=True)
class _Field:
    name: str
    key: str
    hint: Any
    spec: Spec
    default: Any
    init: bool


#: The type of a field that holds any JSON value, as written (``Json`` resolves to a union).
_ANY: Final = "Json"


_FIELDS: dict[type, tuple[_Field, ...]] = {}


def _fields(cls: type) -> tuple[_Field, ...]:
    """The fields of ``cls`` as its JSON holds them, worked out once per class."""
    if cls not in _FIELDS:
        hints = typing.get_type_hints(cls)
        found = []
        for f in dataclasses.fields(cls):
            how = f.metadata.get("codec", Spec())
            if not how.skip:
                hint = _ANY if f.type == _ANY else hints[f.name]
                found.append(_Field(f.name, how.key or f.name, hint, how, f.default, f.init))
        _FIELDS[cls] = tuple(found)
    return _FIELDS[cls]


def _optional(hint: Any) -> Any:
    """``X`` for ``X | None``; None for any other type."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not types.NoneType]
        if len(rest) < len(typing.get_args(hint)):
            return rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007
    return None


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _write(value: Any, snapshot: bool) -> Json:
    if isinstance(value, Record):
        return value.to_snapshot() if snapshot else value.to_dict()
    if isinstance(value, tuple):
        return [_write(v, snapshot) for v in value]
    return typing.cast(Json, value)


_PLURAL: Final = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}


def _read_item(value: Any, hint: Any, where: str, snapshot: bool) -> Any:
    """One element of a tuple field, by its type."""
    if isinstance(hint, type) and issubclass(hint, Record):
        return (hint.from_snapshot if snapshot else hint.from_dict)(value, hint.what)
    if hint is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, hint) or (isinstance(value, bool) and hint is not bool):
        raise WorkloadDataError(f"field {where!r} must be a list of {_PLURAL[hint]}")
    return value


def _read(d: Mapping[str, Any], f: _Field, snapshot: bool) -> Any:
    hint, key = f.hint, f.key
    if f.spec.read is not None:
        return f.spec.read(d)
    inner = _optional(hint)
    if key not in d and (f.spec.omit or inner is not None):
        return f.default if f.default is not dataclasses.MISSING else None
    if key not in d:
        raise WorkloadDataError(f"missing field {key!r}")
    if inner is not None:
        if d[key] is None:
            return None
        hint = inner
    if hint == _ANY:
        return d[key]
    if isinstance(hint, type) and issubclass(hint, Record):
        try:
            return (hint.from_snapshot if snapshot else hint.from_dict)(d.get(key), key)
        except WorkloadDataError as exc:  # (a message that starts with its place keeps it)
            if str(exc).startswith(key):
                raise
            raise WorkloadDataError(f"{key}: {exc}") from None
    if typing.get_origin(hint) is tuple:
        items, args = read_field(d, key, list), typing.get_args(hint)
        if args[-1] is Ellipsis:
            return tuple(_read_item(v, args[0], key, snapshot) for v in items)
        if len(items) != len(args):
            raise WorkloadDataError(f"field {key!r} must hold {len(args)} values")
        return tuple(_read_item(v, a, key, snapshot) for v, a in zip(items, args, strict=True))
    if typing.get_origin(hint) is Literal:
        value = read_field(d, key, str)
        if value not in typing.get_args(hint):
            raise WorkloadDataError(
                f"field {key!r} must be one of {typing.get_args(hint)}, got {value!r}"
            )
        return value
    if hint is float:
        return float(read_field(d, key, float, int))
    if hint is int and f.spec.minimum is not None:
        return read_count(d, key, f.spec.minimum)
    return read_field(d, key, typing.get_origin(hint) or hint)  # (list[Json] as list)


_R = TypeVar("_R", bound="Record")


class Record:
    """A frozen dataclass with one JSON form, declared by its fields."""

    #: What a malformed object of this type is called in its error.
    what: ClassVar[str] = "record"
    #: A file's record: the key its format is written under, first, and the format this
    #: release writes and reads (None: a record inside another).
    version: ClassVar[tuple[str, int] | None] = None

    def to_dict(self) -> dict[str, Json]:
        return _encode(self, False)

    def to_snapshot(self) -> dict[str, Json]:
        """The snapshot form (a record that writes its own JSON keeps all of it)."""
        return self.to_dict() if _own_format(type(self)) else _encode(self, True)

    @classmethod
    def from_dict(cls: type[_R], data: object, what: str | None = None) -> _R:
        """The record from parsed JSON; a bad field raises one WorkloadDataError naming it."""
        return _decode(cls, data, what, False)

    @classmethod
    def from_snapshot(cls: type[_R], data: object, what: str | None = None) -> _R:
        """The record from its snapshot form, the report's own fields at their defaults."""
        return cls.from_dict(data, what) if _own_format(cls) else _decode(cls, data, what, True)

    def check(self) -> None:
        """Rules across fields that a file must follow: raises WorkloadDataError."""


def snapshot_fields(cls: type[Record]) -> tuple[str, ...]:
    """The names of the fields that ``cls``'s snapshot form keeps."""
    return tuple(f.name for f in _fields(cls) if f.spec.snapshot)


def _own_format(cls: type[Record]) -> bool:
    """Whether ``cls`` writes its JSON itself rather than through its fields."""
    return cls.to_dict is not Record.to_dict


def check_version(
    d: Mapping[str, Any], key: str, what: str, reads: int, does: str, hint: str = ""
) -> None:
    """Raise FutureFormatError (``hint`` after its reason) or OldFormatError unless the version
    under ``key`` is ``reads``; ``does``: what this release does with it (``reads format``,
    ``computes scheme``, ``reads``), its noun then naming the version an older file lacks."""
    found = read_field(d, key, int)
    if found > reads:
        raise FutureFormatError(f"{what} {found} (this release {does} {reads}){hint}")
    if found != reads:
        unit = does.partition(" ")[2]
        raise OldFormatError(f"{what} {found}", f"{unit} {reads}".lstrip())


def _encode(record: Record, snapshot: bool) -> dict[str, Json]:
    version = record.version
    out: dict[str, Json] = {} if version is None else {version[0]: version[1]}
    for f in _fields(type(record)):
        value = getattr(record, f.name)
        if (snapshot and not f.spec.snapshot) or (f.spec.omit and value == f.default):
            continue
        if f.spec.write is not None and value is not None:
            written = f.spec.write(value)
        else:
            written = _write(value, snapshot)
        if f.spec.flatten:
            out.update(typing.cast(dict[str, Json], written))
        else:
            out[f.key] = written
    return out


def _decode(cls: type[_R], data: object, what: str | None, snapshot: bool) -> _R:
    d = read_object(data, what or cls.what)
    if cls.version is not None:
        check_version(d, cls.version[0], f"{cls.what} format", cls.version[1], "reads format")
    fields = [f for f in _fields(cls) if f.spec.snapshot or not snapshot]
    record = cls(**{f.name: _read(d, f, snapshot) for f in fields if f.init})
    for f in fields:  # a derived field is what the record derives
        if f.init:
            continue
        stored = canonical_json(_write(_read(d, f, snapshot), snapshot))
        derived = canonical_json(_write(getattr(record, f.name), snapshot))
        if stored != derived:
            raise WorkloadDataError(
                f"field {f.key!r} does not follow from the other fields ({_short(stored)} "
                f"stored, {_short(derived)} derived)"
            )
    record.check()
    return record
