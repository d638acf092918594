"""The verdict on two workload tables, and what changed between them.

This is the one place that decides whether a stored table and a recorded one match; the
snapshot gate and the ``compare`` command both ask it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .signature import (
    InputSignature,
    Json,
    format_node,
    is_tensor_node,
    label_arg,
    tensor_shape,
)
from .storage import SnapshotDocument, SnapshotEntry

ChangeKind = Literal["changed", "appeared", "vanished"]


def documents_match(old: SnapshotDocument, new: SnapshotDocument) -> bool:
    """Same scheme and the same workloads under the same callers (order does not matter)."""
    return old.scheme == new.scheme and Counter(e.identity for e in old.entries) == Counter(
        e.identity for e in new.entries
    )


@dataclass(frozen=True)
class Change:
    """One difference between a stored and a recorded table."""

    kind: ChangeKind
    old: SnapshotEntry | None
    new: SnapshotEntry | None
    details: tuple[str, ...] = ()

    @property
    def entry(self) -> SnapshotEntry:
        entry = self.new or self.old
        assert entry is not None
        return entry


def _pair_score(old: SnapshotEntry, new: SnapshotEntry) -> int:
    if old.structure_hash == new.structure_hash:
        return 3
    if old.input_signature == new.input_signature:
        return 2
    return 1 if old.class_name == new.class_name else 0


def compare_documents(old: SnapshotDocument, new: SnapshotDocument) -> list[Change]:
    """Pair up what differs and say how; an unchanged workload under a changed caller is
    not a change of its own (its caller's change explains it)."""
    remaining = Counter(e.identity for e in new.entries)
    unmatched_old = []
    for entry in old.entries:
        if remaining[entry.identity] > 0:
            remaining[entry.identity] -= 1
        else:
            unmatched_old.append(entry)
    remaining = Counter(e.identity for e in old.entries)
    unmatched_new = []
    for entry in new.entries:
        if remaining[entry.identity] > 0:
            remaining[entry.identity] -= 1
        else:
            unmatched_new.append(entry)

    changes: list[Change] = []
    for entry in unmatched_new:
        candidates = [o for o in unmatched_old if o.name == entry.name and o.depth == entry.depth]
        if not candidates:
            changes.append(Change("appeared", None, entry))
            continue
        best = max(candidates, key=lambda o: _pair_score(o, entry))
        unmatched_old.remove(best)
        if best.hash != entry.hash:
            changes.append(
                Change("changed", best, entry, tuple(explain_entry(best, entry, old, new)))
            )
    changes.extend(Change("vanished", entry, None) for entry in unmatched_old)
    return changes


def _children(doc: SnapshotDocument, parent: SnapshotEntry) -> dict[str, SnapshotEntry]:
    return {
        e.name: e for e in doc.entries if e.parent == parent.hash and e.depth == parent.depth + 1
    }


def changed_submodules(
    old: SnapshotEntry, new: SnapshotEntry, old_doc: SnapshotDocument, new_doc: SnapshotDocument
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
    old_children, new_children = _children(old_doc, old), _children(new_doc, new)
    for name in sorted(old_children.keys() & new_children.keys()):
        o, n = old_children[name], new_children[name]
        if o.structure_hash != n.structure_hash:
            deeper = changed_submodules(o, n, old_doc, new_doc)
            paths.extend(p for p in (f"{name}.{d}" for d in deeper) if p not in paths)
    return paths


def explain_entry(
    old: SnapshotEntry, new: SnapshotEntry, old_doc: SnapshotDocument, new_doc: SnapshotDocument
) -> list[str]:
    """Say in words why two entries paired up by name have different hashes."""
    lines: list[str] = []
    if old.class_name != new.class_name:
        lines.append(f"class {old.class_name} -> {new.class_name}")
    if old.structure_hash != new.structure_hash:
        lines.append(
            f"structure changed (structure hash {old.structure_hash[:8]} -> "
            f"{new.structure_hash[:8]})"
        )
        paths = changed_submodules(old, new, old_doc, new_doc)
        if paths:
            lines.append("submodules whose structure changed: " + ", ".join(paths))
    lines.extend(
        diff_signatures(
            old.input_signature, new.input_signature, lambda p: label_arg(p, new.arg_names)
        )
    )
    if not lines:
        lines.append("same structure and inputs under another fingerprint")
    return lines


def diff_signatures(
    old: InputSignature, new: InputSignature, label: Callable[[str], str] = str
) -> list[str]:
    """One line per argument that differs, e.g. ``input args[0]: shape [1, 3] -> [2, 3]``."""
    lines: list[str] = []
    if len(old.args) != len(new.args):
        lines.append(f"input: {len(old.args)} -> {len(new.args)} positional arguments")
    for i, (a, b) in enumerate(zip(old.args, new.args, strict=False)):
        lines.extend(_diff_node(label(f"args[{i}]"), a, b))
    before, after = dict(old.kwargs), dict(new.kwargs)
    for name in sorted(before.keys() | after.keys()):
        path = f"kwargs[{name!r}]"
        if name not in before:
            lines.append(f"input {path} added: {format_node(after[name])}")
        elif name not in after:
            lines.append(f"input {path} removed (was {format_node(before[name])})")
        else:
            lines.extend(_diff_node(path, before[name], after[name]))
    return lines


def _diff_node(path: str, a: Json, b: Json) -> list[str]:
    if a == b:
        return []
    if is_tensor_node(a) and is_tensor_node(b):
        assert isinstance(a, dict) and isinstance(b, dict)
        out = []
        if tensor_shape(a) != tensor_shape(b):
            out.append(f"input {path}: shape {tensor_shape(a)} -> {tensor_shape(b)}")
        for field in ("dtype", "layout"):
            if a.get(field) != b.get(field):
                out.append(f"input {path}: {field} {a.get(field)} -> {b.get(field)}")
        if out:
            return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            line
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for line in _diff_node(f"{path}[{i}]", x, y)
        ]
    if (
        isinstance(a, dict)
        and isinstance(b, dict)
        and "fields" in a
        and "fields" in b
        and a.keys() == b.keys()
    ):
        fa, fb = a["fields"], b["fields"]
        assert isinstance(fa, dict) and isinstance(fb, dict)
        if fa.keys() == fb.keys() and all(a[k] == b[k] for k in a if k != "fields"):
            return [line for k in fa for line in _diff_node(f"{path}.{k}", fa[k], fb[k])]
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() == {"tuple"}:
        return _diff_node(path, a["tuple"], b["tuple"])
    return [f"input {path}: {format_node(a)} -> {format_node(b)}"]
