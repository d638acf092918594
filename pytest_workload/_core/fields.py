"""Reading fields of stored JSON with errors that say which field is wrong and why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import WorkloadDataError


def read_field(data: Mapping[str, Any], name: str, *types: type, optional: bool = False) -> Any:
    if name not in data:
        if optional:
            return None
        raise WorkloadDataError(f"missing field {name!r}")
    value = data[name]
    if value is None and optional:
        return None
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        expected = " or ".join(t.__name__ for t in types)
        raise WorkloadDataError(f"field {name!r} must be {expected}, got {type(value).__name__}")
    return value


def read_count(data: Mapping[str, Any], name: str, minimum: int, *, optional: bool = False) -> Any:
    """An integer field of at least ``minimum`` (a count, a size): no file this plugin writes
    holds less, so less is a forged or damaged one."""
    value = read_field(data, name, int, optional=optional)
    if value is not None and value < minimum:
        raise WorkloadDataError(f"field {name!r} must be at least {minimum}, got {value}")
    return value


def read_strings(data: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    """An optional list of strings, as a tuple (None when absent)."""
    values = read_field(data, name, list, optional=True)
    if values is not None and not all(isinstance(v, str) for v in values):
        raise WorkloadDataError(f"field {name!r} must be a list of strings")
    return None if values is None else tuple(values)


def read_object(data: object, what: str) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise WorkloadDataError(f"{what} must be a JSON object, got {type(data).__name__}")
    return data
