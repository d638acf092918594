"""JSON as pytest-workload stores it: the one canonical serialisation that every hash is taken
over, and reading with bounds, field by field: every file pytest-workload reads goes through here.

A crafted or damaged file ends in one clear error, never a ``RecursionError``, a ``ValueError``
from a 5000-digit integer, a silent ``inf`` or a key given twice, of which JSON parsers keep the
last and a reviewer may read the first (docs/explanation/guarantees.md, "Reading").
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any, Final, NoReturn, TypeAlias

from .errors import WorkloadDataError

Json: TypeAlias = "bool | int | float | str | list[Json] | dict[str, Json] | None"


def canonical_json(value: object) -> str:
    """The same bytes in every process and machine."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: Deepest nesting of arrays and objects a stored file may have. Input descriptions are
#: bounded well below it (see :data:`MAX_INPUT_DEPTH`), so no file this plugin writes is near it.
MAX_JSON_DEPTH: Final = 200

#: Deepest nesting of containers an input description may have.
MAX_INPUT_DEPTH: Final = 50

#: Longest integer (in decimal digits) stored or described; shapes and counts need far fewer.
MAX_INT_DIGITS: Final = 64


class InvalidJsonError(WorkloadDataError):
    """Text that is not JSON this plugin reads: malformed, nested too deeply, or holding a
    number out of bounds. Its message starts with ``not valid JSON``."""


def _reject_constant(name: str) -> NoReturn:
    raise InvalidJsonError(f"not valid JSON: non-finite number {name}")


def _parse_int(text: str) -> int:
    if (digits := len(text.lstrip("-"))) > MAX_INT_DIGITS:
        raise InvalidJsonError(
            f"not valid JSON: an integer of {digits} digits (at most {MAX_INT_DIGITS})"
        )
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        _reject_constant(text)
    return value


class _Duplicated(dict[str, object]):
    """Found by its path after parsing."""

    key = ""


def _object(found: list[_Duplicated], pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    keys = [k for k, _ in pairs]
    duplicated = _Duplicated(obj)
    duplicated.key = next(k for i, k in enumerate(keys) if k in keys[:i])
    found.append(duplicated)
    return duplicated


def _duplicate(value: object) -> str:
    stack: list[tuple[object, str]] = [(value, "")]
    while True:  # (called only where an object gave a key twice)
        node, path = stack.pop()
        if isinstance(node, _Duplicated):
            return f"key {node.key!r} given twice in one object (at {path or 'the top'})"
        if isinstance(node, dict):
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))


_END: Final = object()


def depth(value: object) -> int:
    """A scalar is 0. Memory grows with the depth only (not with the number of values)."""
    deepest, stack = 0, [iter((value,))]
    while stack:
        node = next(stack[-1], _END)
        if node is _END:
            stack.pop()
            continue
        if isinstance(node, dict):
            stack.append(iter(node.values()))
        elif isinstance(node, list):
            stack.append(iter(node))
        else:
            continue
        deepest = max(deepest, len(stack) - 1)
    return deepest


_TOO_DEEP: Final = f"not valid JSON: nested more than {MAX_JSON_DEPTH} levels deep"

#: The least integer too long to store.
INT_BOUND: Final = 10**MAX_INT_DIGITS


def out_of_bounds(value: object, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why :func:`load_json` would refuse ``value`` once written, naming where in it (``[0]``,
    ``["n"]``)."""
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    while stack:
        node, where, level = stack.pop()
        at = f" at {where}" if where else ""
        if isinstance(node, bool):
            continue
        if isinstance(node, int) and abs(node) >= INT_BOUND:  # str() of 10**5000 itself fails
            return f"an integer of more than {MAX_INT_DIGITS} digits{at}"
        if isinstance(node, float) and not math.isfinite(node):
            return f"the non-finite number {node!r}{at}"
        if isinstance(node, (dict, list, tuple)):
            if level >= max_depth:
                return f"containers nested more than {max_depth} deep{at}"
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((v, f"{where}[{json.dumps(k)}]", level + 1) for k, v in items)
    return None


def load_json(text: str) -> object:
    duplicated: list[_Duplicated] = []
    try:
        data = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_reject_constant,
            object_pairs_hook=functools.partial(_object, duplicated),
        )
    except json.JSONDecodeError as exc:
        raise InvalidJsonError(f"not valid JSON ({exc})") from None
    except RecursionError:
        raise InvalidJsonError(_TOO_DEEP) from None
    if depth(data) > MAX_JSON_DEPTH:
        raise InvalidJsonError(_TOO_DEEP)
    if duplicated:
        raise InvalidJsonError(f"not valid JSON: {_duplicate(data)}")
    return data


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


def read_count(data: Mapping[str, Any], name: str, minimum: int) -> int:
    """No file this plugin writes holds less, so less is a forged or damaged one."""
    value: int = read_field(data, name, int)
    if value < minimum:
        raise WorkloadDataError(f"field {name!r} must be at least {minimum}, got {value}")
    return value


def read_object(data: object, what: str) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise WorkloadDataError(f"{what} must be a JSON object, got {type(data).__name__}")
    return data
