"""Tables that differ only in call signatures: a test's inputs that followed its data."""

from __future__ import annotations

from .diff import _unmatched, entry_signatures
from .document import SnapshotDocument, SnapshotEntry


def signature_changes(
    old: SnapshotDocument, new: SnapshotDocument, tolerance: float = 0.0
) -> list[str] | None:
    """What the call signatures changed, where the tables differ only in that: each workload
    present on one side only (no workload of its identity on the other) has its structure on
    the other side, at its depth, under another call signature. One line per change, e.g.
    ``model (Net): input kwargs['mask'] added: int64[2, 7]``; empty where the tables match;
    None where they differ in anything else (a structure, a computation, a scheme)."""
    if old.scheme != new.scheme:
        return None
    one_sided_old = _unmatched(old.entries, new.entries, tolerance)
    one_sided_new = _unmatched(new.entries, old.entries, tolerance, recorded=True)
    lines: dict[str, None] = {}
    for entry, other, other_one_sided in (
        *((e, new, one_sided_new) for e in one_sided_old),
        *((e, old, one_sided_old) for e in one_sided_new),
    ):
        if entry.identity in {o.identity for o in other.entries}:
            return None
        diffs = _least_signature_change(entry, other, other_one_sided, stored=other is new)
        if diffs is None:
            return None
        lines.update(dict.fromkeys(f"{entry.label} ({entry.class_name}): {d}" for d in diffs))
    return list(lines)


def _least_signature_change(
    entry: SnapshotEntry,
    other: SnapshotDocument,
    other_one_sided: list[SnapshotEntry],
    *,
    stored: bool,
) -> list[str] | None:
    """The signature change from (or, for a ``stored`` entry, to) the workload of the other
    side with the same structure that differs least; one the other side lacks goes first."""
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
    changes = (
        entry_signatures(entry, o) if stored else entry_signatures(o, entry) for o in counterparts
    )
    return min(changes, key=len, default=None)
