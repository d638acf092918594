"""Reading stored JSON with bounds: every file pytest-workload reads goes through here.

A crafted or damaged file must end in one clear error, never a ``RecursionError``, a
``ValueError`` from a 5000-digit integer, a silent ``inf`` or a key given twice, of which JSON
parsers keep the last and a reviewer may read the first: nesting depth, integer length,
non-finite numbers and duplicate keys are refused here, before any field is looked at.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Final, NoReturn

from .errors import WorkloadDataError

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
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        digits = len(text.lstrip("-"))
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
    """An object that gave ``key`` more than once, found by its path after parsing."""

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
    """Which key an object gives twice, and where that object is, as a JSON path."""
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Duplicated):
            return f"key {node.key!r} given twice in one object (at {path or 'the top'})"
        if isinstance(node, dict):
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    raise AssertionError("no object gives a key twice")


def depth(value: object) -> int:
    """Nesting depth of parsed JSON (a scalar is 0), computed without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: list[object] = list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_JSON_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


_TOO_DEEP: Final = f"not valid JSON: nested more than {MAX_JSON_DEPTH} levels deep"

#: The least integer too long to store.
INT_BOUND: Final = 10**MAX_INT_DIGITS


def out_of_bounds(value: object, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why :func:`load_json` would refuse ``value`` once written, naming where in it (``[0]``,
    ``["n"]``); None when it would read it back. Computed without recursion, before writing."""
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
    """Parse stored JSON; anything malformed or out of bounds is an InvalidJsonError."""
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
