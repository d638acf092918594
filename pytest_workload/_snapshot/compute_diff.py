"""Whether two workloads ran the same computation, and, where not, which operations differ.

A computation's list stops where its operations start to follow the data (see
:mod:`.._workload.computation`), so no difference is ever found past that point.

A stored entry without a compute hash (a compiled or scripted module) has no computation on
record: it agrees with any. A data-dependent workload (two calls of one
signature ran different operations) agrees with any too, so its gate does not flap with the
data; it is told by its ``data_dependent`` mark instead.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from .._core.text import short
from .._workload.computation import Computation, SubCall, join_path
from .document import SnapshotDocument, SnapshotEntry

#: Operation-level differences listed per workload before the rest are counted.
MAX_OP_LINES = 8


def computes_agree(a: SnapshotEntry, b: SnapshotEntry) -> bool:
    if a.compute_hash is None or b.compute_hash is None or a.data_dependent or b.data_dependent:
        return True
    return a.compute_hash == b.compute_hash


def compute_lines(
    old: SnapshotEntry, new: SnapshotEntry, old_doc: SnapshotDocument, new_doc: SnapshotDocument
) -> list[str]:
    """``computation changed (...)`` and the operations that differ, by submodule path.

    For a workload whose structure or inputs changed too (another hash), operations that
    only see other shapes are what that change explains: only other operations are shown,
    and nothing when there are none."""
    assert old.compute_hash is not None and new.compute_hash is not None
    hashes = f"{short(old.compute_hash)} -> {short(new.compute_hash)}"
    head = f"computation changed (compute hash {hashes})"
    a = old_doc.computations.get(old.compute_hash)
    b = new_doc.computations.get(new.compute_hash)
    names_only = old.hash != new.hash
    if a is None or b is None:
        return [] if names_only else [f"{head}; the operations are not stored on both sides"]
    if names_only and _names(a) == _names(b):
        return []
    lines: list[str] = []
    # (a submodule's calls are named from it; a root's, from the root)
    base = old.label if old.depth else ""
    diff_operations(a, b, old.label, lines, names_only=names_only, base=base)
    if len(lines) > MAX_OP_LINES:
        lines = [*lines[:MAX_OP_LINES], f"... and {len(lines) - MAX_OP_LINES} more differences"]
    return [head, *lines]


def _child(base: str, name: str) -> str:
    return join_path(base, name) if base else name


def _key(item: str | SubCall) -> str:
    return item if isinstance(item, str) else f"@{item.name}"


def _name(item: str | SubCall) -> str:
    return item.partition("(")[0] if isinstance(item, str) else f"call {item.name}"


def _text(item: str | SubCall) -> str:
    return item if isinstance(item, str) else f"call {item.name}"


def _replaced(a: str | SubCall, b: str | SubCall) -> str:
    """``relu -> gelu`` when the operation changed, the full texts when only its arguments."""
    if _name(a) != _name(b):
        return f"{_name(a)} -> {_name(b)}"
    return f"{_text(a)} -> {_text(b)}"


def _changed_call(a: str | SubCall, b: str | SubCall) -> bool:
    return (
        isinstance(a, SubCall)
        and isinstance(b, SubCall)
        and a.computation.hash != b.computation.hash
    )


def _names(c: Computation) -> list[str]:
    return [_name(op) for op in c.flat]


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
    matcher = SequenceMatcher(None, [_key(i) for i in a.items], [_key(i) for i in b.items], False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = a.items[i1:i2], b.items[j1:j2]
        if tag == "equal":
            for x, y in zip(old, new, strict=True):
                if _changed_call(x, y):
                    assert isinstance(x, SubCall) and isinstance(y, SubCall)
                    child = _child(base, x.name)
                    diff_operations(
                        x.computation, y.computation, child, out, names_only=names_only, base=child
                    )
            continue
        paired = min(len(old), len(new)) if tag == "replace" else 0
        for k in range(paired):
            if names_only and _name(old[k]) == _name(new[k]):
                if _changed_call(old[k], new[k]):
                    x, y = old[k], new[k]
                    assert isinstance(x, SubCall) and isinstance(y, SubCall)
                    child = _child(base, x.name)
                    diff_operations(
                        x.computation, y.computation, child, out, names_only=True, base=child
                    )
                continue
            out.append(f"{path}: {_replaced(old[k], new[k])} at op {j1 + k + 1}")
        for k in range(paired, len(new)):
            out.append(f"{path}: + {_text(new[k])} at op {j1 + k + 1}")
        for k in range(paired, len(old)):
            out.append(f"{path}: - {_text(old[k])} at op {i1 + k + 1}")
