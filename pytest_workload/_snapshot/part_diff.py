"""What differs in one part of two workloads, line by line: their input signatures, parameter
dtypes, operations and module descriptions."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from difflib import SequenceMatcher

from .._core.strict_json import Json, canonical_json
from .._workload.computation import Computation, SubCall, join_path
from .._workload.modules import ModuleTable, child_links
from .._workload.signature import InputSignature, diff_node, format_node, short_type
from .._workload.workload import TestWorkloads, Workload
from .snapshot_files import inline_json

#: Paths named per grouped change before the rest are counted.
MAX_PATHS = 3
#: Grouped changes listed before the rest are counted.
MAX_GROUPS = 10
#: One changed field of one module: its short class name, what changed, and where (its path).
FieldChange = tuple[str, str, str]


def diff_signatures(
    old: InputSignature, new: InputSignature, arg_names: Sequence[str] = ()
) -> list[str]:
    """One line per argument that differs, e.g. ``input args[0] (x): shape [1, 3] -> [2, 3]``
    (a positional argument named where its ``forward``'s parameter name is known)."""
    lines: list[str] = []
    if len(old.args) != len(new.args):
        lines.append(f"input: {len(old.args)} -> {len(new.args)} positional arguments")
    for i, (a, b) in enumerate(zip(old.args, new.args, strict=False)):
        label = f" ({arg_names[i]})" if i < len(arg_names) else ""
        lines.extend(diff_node(f"args[{i}]{label}", a, b))
    before, after = dict(old.kwargs), dict(new.kwargs)
    for name in sorted(before.keys() | after.keys()):
        path = f"kwargs[{name!r}]"
        if name not in before:
            lines.append(f"input {path} added: {format_node(after[name])}")
        elif name not in after:
            lines.append(f"input {path} removed (was {format_node(before[name])})")
        else:
            lines.extend(diff_node(path, before[name], after[name]))
    return lines


def param_dtype_change(old: Workload, new: Workload) -> str | None:
    before, after = old.params.dtypes, new.params.dtypes
    if not before or not after or before == after:
        return None
    noun = "dtype" if len(before) == len(after) == 1 else "dtypes"
    return f"parameter {noun} {', '.join(before)} -> {', '.join(after)}"


def op_name(item: str | SubCall) -> str:
    """An operation's name without its arguments, or a submodule call's."""
    return item.partition("(")[0] if isinstance(item, str) else f"call {item.name}"


def _text(item: str | SubCall) -> str:
    return item if isinstance(item, str) else f"call {item.name}"


def diff_operations(
    a: Computation,
    b: Computation,
    path: str,
    out: list[str],
    *,
    names_only: bool = False,
    base: str = "",
) -> None:
    """Append one line per differing operation of ``path`` (numbered from 1 in the new list,
    in the old one for a removed operation), and recurse into submodule calls that differ,
    named by their path from ``base``; with ``names_only``, an operation whose arguments alone
    differ is not a difference."""
    before, after = ([i if isinstance(i, str) else f"@{i.name}" for i in c.items] for c in (a, b))
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, before, after, False).get_opcodes():
        old, new = a.items[i1:i2], b.items[j1:j2]
        paired = {"equal": len(old), "replace": min(len(old), len(new))}.get(tag, 0)
        for k, (x, y) in enumerate(zip(old[:paired], new[:paired], strict=True)):
            if tag != "equal" and not (names_only and op_name(x) == op_name(y)):
                out.append(f"{path}: {_replaced(x, y)} at op {j1 + k + 1}")
            elif (
                isinstance(x, SubCall)
                and isinstance(y, SubCall)
                and x.computation.hash != y.computation.hash
            ):
                child = join_path(base, x.name)
                diff_operations(
                    x.computation, y.computation, child, out, names_only=names_only, base=child
                )
        for k in range(paired, len(new)):
            out.append(f"{path}: + {_text(new[k])} at op {j1 + k + 1}")
        for k in range(paired, len(old)):
            out.append(f"{path}: - {_text(old[k])} at op {i1 + k + 1}")


def _replaced(a: str | SubCall, b: str | SubCall) -> str:
    """``relu -> gelu`` when the operation changed, the full texts when only its arguments."""
    show = op_name if op_name(a) != op_name(b) else _text
    return f"{show(a)} -> {show(b)}"


def _tensors(kind: str, old: Json, new: Json) -> Iterator[str]:
    def by_name(entries: Json) -> dict[str, list[Json]]:
        rows = entries if isinstance(entries, list) else []
        return {str(e[0]): e[1:] for e in rows if isinstance(e, list) and e}

    before, after = by_name(old), by_name(new)
    for name in [*before, *(n for n in after if n not in before)]:
        if name not in after:
            yield f"{kind} {name} removed"
        elif name not in before:
            yield f"{kind} {name} added: {' '.join(inline_json(v) for v in after[name])}"
        elif canonical_json(before[name]) != canonical_json(after[name]):
            a, b = before[name], after[name]
            if a[1:] == b[1:]:
                yield f"{kind} {name} shape {inline_json(a[0])} -> {inline_json(b[0])}"
            elif a[:1] == b[:1]:
                yield f"{kind} {name} dtype {inline_json(a[1:])} -> {inline_json(b[1:])}"
            else:
                yield f"{kind} {name} {inline_json(a)} -> {inline_json(b)}"


def _attributes(old: Json, new: Json) -> Iterator[str]:
    before = old if isinstance(old, dict) else {}
    after = new if isinstance(new, dict) else {}
    for name in sorted(before.keys() | after.keys()):
        if name not in after:
            yield f"attribute {name} removed (was {inline_json(before[name])})"
        elif name not in before:
            yield f"attribute {name} added: {inline_json(after[name])}"
        elif canonical_json(before[name]) != canonical_json(after[name]):
            yield f"attribute {name} {inline_json(before[name])} -> {inline_json(after[name])}"


def own_changes(old: Mapping[str, Json], new: Mapping[str, Json]) -> list[str]:
    """What differs in two descriptions' own fields (their children aside)."""
    lines: list[str] = []
    for key in [*old, *(k for k in new if k not in old)]:
        a, b = old.get(key), new.get(key)
        if key == "children" or canonical_json(a) == canonical_json(b):
            continue
        if key == "class":
            lines.append(f"class {a} -> {b}")
        elif key == "attributes":
            lines.extend(_attributes(a, b))
        elif key in ("parameters", "buffers"):
            lines.extend(_tensors(key.removesuffix("s"), a, b))
        elif key == "training":
            lines.append(f"mode {'train' if a else 'eval'} -> {'train' if b else 'eval'}")
        else:
            lines.append(f"{key} {inline_json(a)} -> {inline_json(b)}")
    return lines


def field_changes(
    old_table: ModuleTable, new_table: ModuleTable, old: str, new: str, path: str
) -> list[FieldChange] | None:
    """Every changed field between two module trees, walked side by side through the stored
    descriptions down every path whose hash differs; None when a description is missing (a
    hand-edited snapshot)."""
    if old == new:
        return []
    a, b = old_table.get(old), new_table.get(new)
    if a is None or b is None:
        return None
    cls = short_type(str(b["class"])) if b.get("class") is not None else "module"
    found = [(cls, t, path) for t in own_changes(a, b)]
    before, after = dict(child_links(a)), dict(child_links(b))
    prefix = f"{path}." if path else ""
    for name in [*before, *(n for n in after if n not in before)]:
        if name not in after:
            found.append((cls, f"child {name} removed", path))
        elif name not in before:
            found.append((cls, f"child {name} added", path))
        else:
            deeper = field_changes(old_table, new_table, before[name], after[name], prefix + name)
            if deeper is None:
                return None
            found.extend(deeper)
    return found


def grouped_lines(changes: list[FieldChange], root: str) -> list[str]:
    """One line per distinct change (every ``BatchNorm2d`` that gained ``bias=True`` is one),
    naming how many modules and which (``root`` names the module at the empty path)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for cls, text, path in changes:
        groups.setdefault((cls, text), []).append(path or root)
    lines = []
    for (cls, text), paths in list(groups.items())[:MAX_GROUPS]:
        shown = ", ".join(paths[:MAX_PATHS]) + (", ..." if len(paths) > MAX_PATHS else "")
        noun = "module" if len(paths) == 1 else "modules"
        lines.append(f"{cls} {text} ({len(paths)} {noun}: {shown})")
    if len(groups) > MAX_GROUPS:
        lines.append(f"... and {len(groups) - MAX_GROUPS} more kinds of change")
    return lines


def _children(table: TestWorkloads, parent: Workload) -> dict[str, Workload]:
    """Recorded children of ``parent``, below depth 1 only those under its paths: two layers
    of one kind share a hash (``a`` must not adopt ``b.0``)."""
    prefixes = tuple(f"{p}." for p in parent.paths) if parent.depth else ("",)
    return {e.name: e for e in table.children(parent) if e.name.startswith(prefixes)}


def changed_submodules(
    old: Workload, new: Workload, old_table: TestWorkloads, new_table: TestWorkloads
) -> list[str]:
    """Submodule paths whose structure differs: direct children, then recorded descendants."""
    paths: list[str] = []
    before, after = dict(old.submodules), dict(new.submodules)
    for name in sorted(before.keys() | after.keys()):
        if name not in before:
            paths.append(f"{name} (added)")
        elif name not in after:
            paths.append(f"{name} (removed)")
        elif before[name] != after[name]:
            paths.append(name)
    old_children, new_children = _children(old_table, old), _children(new_table, new)
    for name in sorted(old_children.keys() & new_children.keys()):
        o, n = old_children[name], new_children[name]
        if o.structure_hash != n.structure_hash:
            deeper = changed_submodules(o, n, old_table, new_table)
            paths.extend(p for p in (f"{name}.{d}" for d in deeper) if p not in paths)
    return paths
