"""Whether a snapshot's change is only a library upgrade, safe to accept without review.

An upgrade may reword a module's configuration text, add or change its plain attributes, or
move its class to another module; it must leave alone everything the computation depends on:
each workload's parameters, buffers, children and train/eval mode (compared through the stored
module descriptions, down the whole tree), its input signature, parameter bytes, FLOPs,
computation fingerprint and the paths that ran it. ``--workload-accept-upgrade`` rewrites a
snapshot only when :func:`upgrade_refusals` finds nothing.
"""

from __future__ import annotations

from .._core.strict_json import Json, canonical_json, sha256_hex
from .._core.text import short
from .._workload.modules import ModuleTable, child_links
from .diff import paths_agree
from .document import SnapshotDocument, SnapshotEntry

#: Description fields an upgrade may change: the wording, never the computation.
REWORDING = frozenset({"class", "config", "attributes"})


def _skeleton(table: ModuleTable, key: str, memo: dict[str, str | None]) -> str | None:
    """A hash of a tree without its rewordable fields; None where a description is missing."""
    if key in memo:
        return memo[key]
    description = table.get(key)
    if description is None:
        memo[key] = None
        return None
    kept: dict[str, Json] = {
        k: v for k, v in description.items() if k not in REWORDING and k != "children"
    }
    children: list[Json] = []
    for name, child in child_links(description):
        inner = _skeleton(table, child, memo)
        if inner is None:
            memo[key] = None
            return None
        children.append([name, inner])
    kept["children"] = children
    memo[key] = digest = sha256_hex(canonical_json(kept))
    return digest


def _entry_refusal(
    old: SnapshotEntry, new: SnapshotEntry, skeletons: tuple[str | None, str | None]
) -> list[str]:
    what = []
    if old.input_signature != new.input_signature:
        what.append(f"input {old.input_signature.format()} -> {new.input_signature.format()}")
    if skeletons[0] is None or skeletons[1] is None:
        what.append("no stored module description to compare its parameters and children with")
    elif skeletons[0] != skeletons[1]:
        what.append("parameters, buffers, children or train/eval mode changed")
    if old.param_bytes != new.param_bytes:
        what.append(f"parameter bytes {old.param_bytes} -> {new.param_bytes}")
    if old.flops != new.flops:
        what.append(f"FLOPs {old.flops} -> {new.flops}")
    if old.compute_hash != new.compute_hash:
        hashes = [short(h) if h else "unknown" for h in (old.compute_hash, new.compute_hash)]
        what.append(f"computation changed (compute hash {hashes[0]} -> {hashes[1]})")
    if canonical_json(old.user_key) != canonical_json(new.user_key):
        what.append("user key changed")
    if not paths_agree(old, new):
        what.append(f"paths {old.label} -> {new.label}")
    return [f"{new.label} ({new.class_name}): {w}" for w in what]


def upgrade_refusals(stored: SnapshotDocument, recorded: SnapshotDocument) -> list[str]:
    """Why the recorded table is more than an upgrade of the stored one (empty: it is not).

    Workloads are paired in order: an upgrade changes hashes, never which calls ran."""
    if stored.scheme != recorded.scheme:
        return [f"fingerprint scheme {stored.scheme} -> {recorded.scheme} (migrate it instead)"]
    if len(stored.entries) != len(recorded.entries):
        return [f"{len(stored.entries)} workloads stored, {len(recorded.entries)} recorded"]
    memos: tuple[dict[str, str | None], dict[str, str | None]] = ({}, {})
    refusals: list[str] = []
    for old, new in zip(stored.entries, recorded.entries, strict=True):
        if (old.name, old.depth) != (new.name, new.depth):
            refusals.append(f"stored workload {old.label} is not the recorded {new.label}")
            continue
        skeletons = (
            _skeleton(stored.modules, old.structure_hash, memos[0]),
            _skeleton(recorded.modules, new.structure_hash, memos[1]),
        )
        refusals.extend(_entry_refusal(old, new, skeletons))
    return refusals


def changed_count(stored: SnapshotDocument, recorded: SnapshotDocument) -> int:
    """How many workloads an accepted upgrade rehashes."""
    return sum(o.hash != n.hash for o, n in zip(stored.entries, recorded.entries, strict=False))
