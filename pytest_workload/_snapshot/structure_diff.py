"""Which field of which module changed between two structure hashes: two module trees walked
side by side through the stored descriptions, down every path whose hash differs. The same
change in many modules (every ``BatchNorm2d`` gained ``bias=True``) is one line."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .._core.strict_json import Json, canonical_json
from .._workload.modules import ModuleTable, child_links

#: Paths named per grouped change before the rest are counted.
MAX_PATHS = 3
#: Grouped changes listed before the rest are counted.
MAX_GROUPS = 10


@dataclass(frozen=True)
class FieldChange:
    """One changed field of one module: ``text`` is what changed, ``path`` where."""

    class_name: str
    text: str
    path: str


def _short_class(description: Mapping[str, Json]) -> str:
    name = description.get("class")
    return str(name).rsplit(".", 1)[-1] if name is not None else "module"


def _show(value: Json) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _config_text(old: str, new: str) -> str:
    """The old text whole, the new one with the comma-separated parts it shares with the
    old at either end shown as ``...``: ``'4, eps=1e-05, affine=True' -> '..., bias=True,
    ...'``."""
    a, b = old.split(", "), new.split(", ")
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    middle = b[start : len(b) - end]
    if start == end == 0 or not middle:
        return f"config {old!r} -> {new!r}"
    shown = (["..."] if start else []) + middle + (["..."] if end else [])
    return f"config {old!r} -> {', '.join(shown)!r}"


def _tensors(kind: str, old: Json, new: Json) -> Iterator[str]:
    def by_name(entries: Json) -> dict[str, list[Json]]:
        rows = entries if isinstance(entries, list) else []
        return {str(e[0]): e[1:] for e in rows if isinstance(e, list) and e}

    before, after = by_name(old), by_name(new)
    for name in [*before, *(n for n in after if n not in before)]:
        if name not in after:
            yield f"{kind} {name} removed"
        elif name not in before:
            yield f"{kind} {name} added: {' '.join(_show(v) for v in after[name])}"
        elif canonical_json(before[name]) != canonical_json(after[name]):
            a, b = before[name], after[name]
            if a[1:] == b[1:]:
                yield f"{kind} {name} shape {_show(a[0])} -> {_show(b[0])}"
            elif a[:1] == b[:1]:
                yield f"{kind} {name} dtype {_show(a[1:])} -> {_show(b[1:])}"
            else:
                yield f"{kind} {name} {_show(a)} -> {_show(b)}"


def _attributes(old: Json, new: Json) -> Iterator[str]:
    before = old if isinstance(old, dict) else {}
    after = new if isinstance(new, dict) else {}
    for name in sorted(before.keys() | after.keys()):
        if name not in after:
            yield f"attribute {name} removed (was {_show(before[name])})"
        elif name not in before:
            yield f"attribute {name} added: {_show(after[name])}"
        elif canonical_json(before[name]) != canonical_json(after[name]):
            yield f"attribute {name} {_show(before[name])} -> {_show(after[name])}"


def own_changes(old: Mapping[str, Json], new: Mapping[str, Json]) -> list[str]:
    """What differs in two descriptions' own fields (their children aside)."""
    lines: list[str] = []
    for key in [*old, *(k for k in new if k not in old)]:
        a, b = old.get(key), new.get(key)
        if key == "children" or canonical_json(a) == canonical_json(b):
            continue
        if key == "class":
            lines.append(f"class {a} -> {b}")
        elif key == "config" and isinstance(a, str) and isinstance(b, str):
            lines.append(_config_text(a, b))
        elif key == "attributes":
            lines.extend(_attributes(a, b))
        elif key in ("parameters", "buffers"):
            lines.extend(_tensors(key.removesuffix("s"), a, b))
        elif key == "training":
            lines.append(f"mode {'train' if a else 'eval'} -> {'train' if b else 'eval'}")
        else:
            lines.append(f"{key} {_show(a)} -> {_show(b)}")
    return lines


def field_changes(
    old_table: ModuleTable, new_table: ModuleTable, old: str, new: str, path: str
) -> list[FieldChange] | None:
    """Every changed field between two trees; None when a description is missing (a
    scheme 1 snapshot stores none)."""
    if old == new:
        return []
    a, b = old_table.get(old), new_table.get(new)
    if a is None or b is None:
        return None
    found = [FieldChange(_short_class(b), t, path) for t in own_changes(a, b)]
    before, after = dict(child_links(a)), dict(child_links(b))
    prefix = f"{path}." if path else ""
    for name in [*before, *(n for n in after if n not in before)]:
        where = f"{prefix}{name}"
        if name not in after:
            found.append(FieldChange(_short_class(b), f"child {name} removed", path))
        elif name not in before:
            found.append(FieldChange(_short_class(b), f"child {name} added", path))
        else:
            deeper = field_changes(old_table, new_table, before[name], after[name], where)
            if deeper is None:
                return None
            found.extend(deeper)
    return found


def grouped_lines(changes: list[FieldChange], root: str) -> list[str]:
    """One line per distinct change, naming how many modules and which (``root`` names the
    module at the empty path)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for c in changes:
        groups.setdefault((c.class_name, c.text), []).append(c.path or root)
    lines = []
    for (cls, text), paths in list(groups.items())[:MAX_GROUPS]:
        shown = ", ".join(paths[:MAX_PATHS]) + (", ..." if len(paths) > MAX_PATHS else "")
        noun = "module" if len(paths) == 1 else "modules"
        lines.append(f"{cls} {text} ({len(paths)} {noun}: {shown})")
    if len(groups) > MAX_GROUPS:
        lines.append(f"... and {len(groups) - MAX_GROUPS} more kinds of change")
    return lines
