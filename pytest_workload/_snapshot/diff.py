"""The verdict on two workload tables, and what changed between them: the one place that
decides whether a stored table and a recorded one match (the snapshot gate and the ``compare``
command both ask it)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal

from .._compile import (
    CompileHealth,
    Readiness,
    health_agrees,
    health_lines,
    readiness_agrees,
    readiness_lines,
)
from .._core.strict_json import Json, canonical_json
from .._core.text import short
from .._fingerprint.distance import distance_factor, nearest
from .._workload.signature import label_arg, workload_key
from .document import SnapshotDocument, SnapshotEntry
from .part_diff import (
    compute_lines,
    computes_agree,
    cost_lines,
    costs_agree,
    diff_signatures,
    field_changes,
    grouped_lines,
)

SCALED = "same structure at a scaled shape:"


def format_key(key: Json) -> str:
    """A user key as compact JSON, the way messages show it."""
    return json.dumps(key, ensure_ascii=False, separators=(",", ":"))


def _identity(e: SnapshotEntry) -> tuple[str | None, str, int, str]:
    """What must be equal for the snapshot to pass: the workload under its caller, the user's
    own key for it, and its parameter bytes. FLOPs are left out: they may be unknown (a replay
    that failed), so they are compared apart."""
    return (e.parent, e.hash, e.depth, canonical_json([e.user_key, e.param_bytes]))


def _key(e: SnapshotEntry) -> list[Json]:
    return workload_key(e.structure_hash, e.input_signature)


def documents_match(old: SnapshotDocument, new: SnapshotDocument, tolerance: float = 0.0) -> bool:
    """Same scheme and the same workloads under the same callers (order does not matter),
    whose costs grew by no more than ``tolerance``."""
    return (
        old.scheme == new.scheme
        and len(old.entries) == len(new.entries)
        and not _unmatched(old.entries, new.entries, tolerance)
    )


def paths_agree(a: SnapshotEntry, b: SnapshotEntry) -> bool:
    """The same paths ran a submodule workload (a layer more or fewer of the same kind is a
    change). A root's one path is its call site's name, which renaming a variable changes:
    not compared."""
    return a.depth == 0 or a.patterns == b.patterns


@dataclass(frozen=True)
class Change:
    """One difference between a stored and a recorded table."""

    kind: Literal["changed", "appeared", "vanished"]
    old: SnapshotEntry | None
    new: SnapshotEntry | None
    details: tuple[str, ...] = ()

    @property
    def entry(self) -> SnapshotEntry:
        entry = self.new or self.old
        assert entry is not None
        return entry


def _pair_score(old: SnapshotEntry, new: SnapshotEntry) -> int:
    """How likely ``new`` is ``old`` changed; 0 means unrelated."""
    if old.depth != new.depth:
        return 0
    same = (
        old.name == new.name,
        old.structure_hash == new.structure_hash,
        old.input_signature == new.input_signature,
        old.class_name == new.class_name,
    )
    name, structure, signature, cls = same
    related = name or structure or (cls and signature)
    return sum(w for w, s in zip((8, 4, 2, 1), same, strict=True) if s) if related else 0


def _agree(old: SnapshotEntry, new: SnapshotEntry, tolerance: float) -> bool:
    """Everything but the identity agrees: FLOPs, computations, paths, costs, compile
    health and readiness."""
    # (a FLOP count on one side only differs: an unknown count is no evidence of no change)
    return (
        old.flops == new.flops
        and computes_agree(old, new)
        and paths_agree(old, new)
        and costs_agree(old, new, tolerance)
        and health_agrees(old.compile_health, new.compile_health)
        and readiness_agrees(old.compile_readiness, new.compile_readiness)
    )


def _unmatched(
    entries: tuple[SnapshotEntry, ...],
    others: tuple[SnapshotEntry, ...],
    tolerance: float,
    *,
    recorded: bool = False,
) -> list[SnapshotEntry]:
    """Entries with no counterpart in ``others`` (each used once): the same identity, and
    the rest agreeing (``recorded``: ``entries`` are the recorded ones, ``others`` stored)."""
    pool: defaultdict[Hashable, list[SnapshotEntry]] = defaultdict(list)
    for other in others:
        pool[_identity(other)].append(other)
    unmatched = []
    for entry in entries:
        candidates = pool[_identity(entry)]
        pairs = ((o, (o, entry) if recorded else (entry, o)) for o in candidates)
        fit = next((o for o, pair in pairs if _agree(*pair, tolerance)), None)
        if fit is None:
            unmatched.append(entry)
        else:
            candidates.remove(fit)
    return unmatched


def _new_readiness(readiness: Readiness | None) -> list[str]:
    """What a new workload's readiness check found, against a clean compile."""
    if readiness is None:
        return []
    return readiness_lines(Readiness(readiness.backend, CompileHealth()), readiness)


def compare_documents(
    old: SnapshotDocument, new: SnapshotDocument, tolerance: float = 0.0
) -> list[Change]:
    """Pair up what differs and say how; an unchanged workload under a changed caller is
    not a change of its own (its caller's change explains it)."""
    unmatched_old = _unmatched(old.entries, new.entries, tolerance)
    changes: list[Change] = []
    for entry in _unmatched(new.entries, old.entries, tolerance, recorded=True):
        best = max(unmatched_old, key=lambda o: _pair_score(o, entry), default=None)
        if best is None or _pair_score(best, entry) == 0:
            # (its breaks and recompiles say what dynamo made of it: a guard that failed)
            found = (
                *_nearest_stored(entry, old),
                *health_lines(CompileHealth(), entry.compile_health),
                *_new_readiness(entry.compile_readiness),
            )
            changes.append(Change("appeared", None, entry, found))
            continue
        unmatched_old.remove(best)
        more_than_the_caller = _identity(best)[1:] != _identity(entry)[1:]
        if more_than_the_caller or not _agree(best, entry, tolerance):
            details = tuple(explain_entry(best, entry, old, new))
            changes.append(Change("changed", best, entry, details))
    changes.extend(Change("vanished", entry, None) for entry in unmatched_old)
    return changes


def _signatures(old: SnapshotEntry, new: SnapshotEntry) -> list[str]:
    return diff_signatures(
        old.input_signature, new.input_signature, lambda p: label_arg(p, new.arg_names)
    )


def scaling(old: SnapshotEntry, new: SnapshotEntry) -> str | None:
    """The shape relation of two workloads of one structure, when one divides the other."""
    up, down = distance_factor(_key(new), _key(old)), distance_factor(_key(old), _key(new))
    if math.isfinite(up) and up > 1:
        return f"{SCALED} {up:g}x the stored workload (distance factor {up:g})"
    if math.isfinite(down) and down > 1:
        return (
            f"{SCALED} 1/{down:g} of the stored workload (distance factor {down:g} the other way)"
        )
    return None


def _nearest_stored(entry: SnapshotEntry, old: SnapshotDocument) -> list[str]:
    """Name the stored workload an appeared one is a scaled version of, if there is one."""
    stored = {canonical_json(_key(e)): e for e in old.entries}
    found = nearest(_key(entry), [_key(e) for e in old.entries])
    if found is not None:
        e, how = stored[canonical_json(found[0])], f" at distance factor {found[1]:g}"
    else:
        reverse = [(distance_factor(_key(e), _key(entry)), k) for k, e in stored.items()]
        smaller = min((r for r in reverse if math.isfinite(r[0])), default=None)
        if smaller is None:
            return []
        e, how = stored[smaller[1]], f", {smaller[0]:g}x this one (distance factor)"
    return [f"nearest stored workload: {e.label} {e.input_signature.format()}{how}"]


def _children(doc: SnapshotDocument, parent: SnapshotEntry) -> dict[str, SnapshotEntry]:
    """Recorded children of ``parent``: linked by its hash, and below depth 1 also by path,
    since two layers of one kind share a hash (``a`` must not adopt ``b.0``)."""
    prefixes = tuple(f"{p}." for p in parent.paths) if parent.depth else ("",)
    return {
        e.name: e
        for e in doc.entries
        if e.parent == parent.hash and e.depth == parent.depth + 1 and e.name.startswith(prefixes)
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
    if canonical_json(old.user_key) != canonical_json(new.user_key):
        lines.append(f"user key changed: {format_key(old.user_key)} -> {format_key(new.user_key)}")
    if (relation := scaling(old, new)) is not None:
        lines.append(relation)
    if old.class_name != new.class_name:
        lines.append(f"class {old.class_name} -> {new.class_name}")
    if old.structure_hash != new.structure_hash:
        lines.extend(_structure_lines(old, new, old_doc, new_doc))
    lines.extend(_signatures(old, new))
    if old.flops != new.flops:
        lines.append(f"FLOPs {_count(old.flops)} -> {_count(new.flops)}")
    if old.param_bytes != new.param_bytes:
        lines.append(f"parameter bytes {_count(old.param_bytes)} -> {_count(new.param_bytes)}")
    if not paths_agree(old, new):
        lines.append(f"paths {old.label} -> {new.label}")
    if not computes_agree(old, new):
        lines.extend(compute_lines(old, new, old_doc, new_doc))
    if old.hash == new.hash:  # (another structure or input has other costs: not news)
        lines.extend(cost_lines(old, new))
    lines.extend(health_lines(old.compile_health, new.compile_health))
    lines.extend(readiness_lines(old.compile_readiness, new.compile_readiness))
    if not lines:
        lines.append("same structure and inputs under another fingerprint")
    return lines


def _structure_lines(
    old: SnapshotEntry, new: SnapshotEntry, old_doc: SnapshotDocument, new_doc: SnapshotDocument
) -> list[str]:
    """A structure change, or a dtype change where the entries show it is nothing else."""
    dtypes = _param_dtype_change(old, new)
    without = old.structure_hash_without_dtypes
    if without is not None and without == new.structure_hash_without_dtypes:
        return [f"{dtypes or 'parameter or buffer dtypes changed'} (structure otherwise the same)"]
    hashes = f"{short(old.structure_hash)} -> {short(new.structure_hash)}"
    lines = [f"structure changed (structure hash {hashes})"]
    path = new.name if new.depth else ""
    fields = field_changes(
        old_doc.modules, new_doc.modules, old.structure_hash, new.structure_hash, path
    )
    if fields:
        lines.extend(grouped_lines(fields, new.name))
        return lines
    paths = changed_submodules(old, new, old_doc, new_doc)
    if paths:
        lines.append("submodules whose structure changed: " + ", ".join(paths))
    return lines + ([dtypes] if dtypes else [])


def _param_dtype_change(old: SnapshotEntry, new: SnapshotEntry) -> str | None:
    before, after = old.param_dtypes, new.param_dtypes
    if not before or not after or before == after:
        return None
    noun = "dtype" if len(before) == len(after) == 1 else "dtypes"
    return f"parameter {noun} {', '.join(before)} -> {', '.join(after)}"


def _count(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def signature_changes(
    old: SnapshotDocument, new: SnapshotDocument, tolerance: float = 0.0
) -> list[str] | None:
    """What the call signatures changed, where the tables differ only in that (each one-sided
    workload has its structure on the other side, at its depth, under another signature): one
    line per change; empty where the tables match; None where they differ in anything else."""
    if old.scheme != new.scheme:
        return None
    one_sided_old = _unmatched(old.entries, new.entries, tolerance)
    one_sided_new = _unmatched(new.entries, old.entries, tolerance, recorded=True)
    lines: dict[str, None] = {}
    for entry, other, other_one_sided in (
        *((e, new, one_sided_new) for e in one_sided_old),
        *((e, old, one_sided_old) for e in one_sided_new),
    ):
        if _identity(entry) in {_identity(o) for o in other.entries}:
            return None
        # the counterpart of the same structure that differs least; a one-sided one first
        counterparts = sorted(
            (
                o
                for o in other.entries
                if o.structure_hash == entry.structure_hash
                and o.depth == entry.depth
                and o.input_signature != entry.input_signature
            ),
            key=lambda o: (o not in other_one_sided, o.name != entry.name),
        )
        diffs = min(
            (
                _signatures(entry, o) if other is new else _signatures(o, entry)
                for o in counterparts
            ),
            key=len,
            default=None,
        )
        if diffs is None:
            return None
        lines.update(dict.fromkeys(f"{entry.label} ({entry.class_name}): {d}" for d in diffs))
    return list(lines)


def shrunk(old: SnapshotDocument, new: SnapshotDocument) -> list[str]:
    """For each recorded workload whose stored costs were higher, or which broke or
    recompiled less than stored, what shrank (a note: the gate passes it)."""
    stored = {(e.parent, e.hash, e.depth): e for e in old.entries}
    lines = []
    for entry in new.entries:
        before = stored.get((entry.parent, entry.hash, entry.depth))
        if before is None:
            continue
        moved = []
        if costs_agree(before, entry, 0.0) and before.costs != entry.costs:
            moved += [line for line in cost_lines(before, entry) if " -> " in line]
        if health_agrees(before.compile_health, entry.compile_health):
            moved += health_lines(before.compile_health, entry.compile_health)
        if readiness_agrees(before.compile_readiness, entry.compile_readiness):
            moved += readiness_lines(before.compile_readiness, entry.compile_readiness)
        lines += [f"{entry.label}: {'; '.join(moved)}"] if moved else []
    return lines
