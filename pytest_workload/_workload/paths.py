"""Module paths stored compressed, exactly: ``blocks.[0-49].fc`` for fifty ``blocks.N.fc`` (the
grammar: docs/reference/snapshot-files.md, "Path patterns"). Products of component sets merge
while two agree on every component but one integer position, a union that is exact, so
``expand_paths(compress_paths(p))`` is ``p`` as a set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from typing import Any, Final

from .._core.codec import codec
from .._core.errors import WorkloadDataError
from .._core.strict_json import MAX_INT_DIGITS, read_field

#: Paths one workload's patterns may stand for: a hand-edited ``[0-999999999]`` is refused
#: before it is expanded.
MAX_PATHS: Final = 1_000_000

_INTEGER: Final = re.compile(r"0|[1-9][0-9]*")
_RANGE: Final = re.compile(r"(0|[1-9][0-9]*)(?:-(0|[1-9][0-9]*))?")
_ESCAPED: Final = re.compile(r"[\[\]\\]")
#: In a literal: an escape (its character, empty for a lone one at the end), or a bracket.
_TOKEN: Final = re.compile(r"\\(.?)|[\[\]]", re.DOTALL)

#: A component while compressing: a literal, or a set of integers.
_Component = str | frozenset[int]
_Item = tuple[_Component, ...]


def _component(text: str) -> _Component:
    # a longer run of digits than strict JSON allows in a number is compressed as a name,
    # which stands for itself all the same
    if len(text) <= MAX_INT_DIGITS and _INTEGER.fullmatch(text):
        return frozenset((int(text),))
    return text


def _merge_at(items: list[_Item], position: int) -> list[_Item]:
    """Items that agree on every component but an integer one at ``position``, as one."""
    merged: dict[_Item, set[int]] = {}
    kept: list[_Item] = []
    for item in items:
        value = item[position]
        if isinstance(value, str):
            kept.append(item)
        else:
            merged.setdefault(item[:position] + item[position + 1 :], set()).update(value)
    kept += [(*rest[:position], frozenset(ints), *rest[position:]) for rest, ints in merged.items()]
    return kept


def _ranges(ints: frozenset[int]) -> str:
    # (consecutive integers keep their distance from their index in the sorted list)
    steps = groupby(enumerate(sorted(ints)), key=lambda pair: pair[1] - pair[0])
    runs = [[n for _, n in run] for _, run in steps]
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _write(component: _Component) -> str:
    if isinstance(component, str):
        return _ESCAPED.sub(lambda m: "\\" + m.group(), component)
    if len(component) == 1:
        return str(next(iter(component)))
    return f"[{_ranges(component)}]"


def _order(component: _Component) -> tuple[int, tuple[int, ...], str]:
    """Numbers before names, numbers as numbers."""
    if isinstance(component, str):
        return (1, (), component)
    return (0, tuple(sorted(component)), "")


def compress_paths(paths: Iterable[str]) -> list[str]:
    """The fewest patterns this merging finds for ``paths`` (duplicates ignored), sorted
    naturally (numbers as numbers)."""
    by_length: dict[int, list[_Item]] = {}
    for path in dict.fromkeys(paths):
        item = tuple(_component(c) for c in path.split("."))
        by_length.setdefault(len(item), []).append(item)
    found: list[_Item] = []
    for length, items in by_length.items():
        count = None
        while count != len(items):  # (until a round over every position merges nothing)
            count = len(items)
            for position in range(length):
                items = _merge_at(items, position)
        found += items
    found.sort(key=lambda item: [_order(c) for c in item])
    return [".".join(_write(c) for c in item) for item in found]


def natural_key(path: str) -> list[tuple[int, tuple[int, ...], str]]:
    """Sorts paths naturally: ``layers.2`` before ``layers.10``."""
    return [_order(_component(c)) for c in path.split(".")]


def name_first(name: str, paths: Iterable[str]) -> tuple[str, ...]:
    """``name`` and the other ``paths`` in natural order: how a workload keeps its paths."""
    return (name, *sorted({p for p in paths if p != name}, key=natural_key))


def _malformed(pattern: str, why: str) -> WorkloadDataError:
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    return WorkloadDataError(f"path pattern {shown!r}: {why}")


def _integers(text: str, pattern: str) -> list[int]:
    ints: list[int] = []
    for part in text.split(","):
        match = _RANGE.fullmatch(part)
        if match is None or any(len(n or "") > MAX_INT_DIGITS for n in match.groups()):
            why = f"is not an integer or a range a-b (of at most {MAX_INT_DIGITS} digits)"
            raise _malformed(pattern, f"{part[:80]!r} {why}")
        low = int(match[1])
        high = low if match[2] is None else int(match[2])
        if match[2] is not None and high <= low:
            raise _malformed(pattern, f"range {part!r} is not written as low-high, low < high")
        if ints and low <= ints[-1] + 1:
            raise _malformed(
                pattern,
                f"{part!r} overlaps, touches or precedes the range before it (ranges are "
                "ascending, disjoint and written minimally)",
            )
        if len(ints) + high - low >= MAX_PATHS:
            raise _malformed(pattern, f"it stands for more than {MAX_PATHS:,} paths")
        ints.extend(range(low, high + 1))
    return ints


def _literal(text: str, pattern: str) -> str:
    def unescape(match: re.Match[str]) -> str:
        if match[0] in "[]":
            c = match[0]
            why = f"is neither a name (escape {c!r} as '\\{c}') nor an integer set [a-b,c]"
            raise _malformed(pattern, f"{text[:80]!r} {why}")
        if not match[1]:
            raise _malformed(pattern, f"{text[:80]!r} ends in a lone '\\'")
        if match[1] not in "[]\\":
            raise _malformed(pattern, f"'\\' escapes only '[', ']' and '\\', not {match[1]!r}")
        return match[1]

    return _TOKEN.sub(unescape, text)


def _expand_one(pattern: str) -> list[str]:
    paths = [""]
    for i, text in enumerate(pattern.split(".")):
        if text.startswith("[") and text.endswith("]") and len(text) > 1:
            values = [str(n) for n in _integers(text[1:-1], pattern)]
        else:
            values = [_literal(text, pattern)]
        if len(paths) * len(values) > MAX_PATHS:
            raise _malformed(pattern, f"it stands for more than {MAX_PATHS:,} paths")
        paths = [f"{p}.{v}" if i else v for p in paths for v in values]
    return paths


def expand_paths(patterns: Sequence[object]) -> list[str]:
    """Every path ``patterns`` stand for, pattern by pattern; a malformed pattern, a path
    listed twice or more than :data:`MAX_PATHS` paths raise :class:`WorkloadDataError`."""
    paths: dict[str, None] = {}
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise WorkloadDataError(
                f"a path pattern must be a string, got {type(pattern).__name__}"
            )
        for path in _expand_one(pattern):
            if path in paths:
                raise _malformed(pattern, f"path {path[:80]!r} is listed twice")
            paths[path] = None
        if len(paths) > MAX_PATHS:
            raise _malformed(pattern, f"the patterns stand for more than {MAX_PATHS:,} paths")
    return list(paths)


def read_paths(d: Mapping[str, Any]) -> tuple[str, ...]:
    """A stored workload's ``paths`` patterns, expanded, its ``name`` first."""
    name = read_field(d, "name", str)
    paths = expand_paths(read_field(d, "paths", list))
    if name not in paths:
        raise WorkloadDataError(f"name {name!r} is not one of its paths")
    return name_first(name, paths)


def read_submodules(d: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    submodules = read_field(d, "submodules", dict)
    if not all(isinstance(v, str) for v in submodules.values()):
        raise WorkloadDataError("submodules must map names to structure hashes")
    return tuple(submodules.items())


#: How a record's ``paths`` and ``submodules`` are stored: the paths compressed to patterns
#: and read back expanded, name first; the submodules as an object.
PATHS: Final = codec(read=read_paths, write=compress_paths)
SUBMODULES: Final = codec(read=read_submodules, write=dict)
