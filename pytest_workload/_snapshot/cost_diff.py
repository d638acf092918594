"""Whether a workload's deterministic costs grew, and by how much each moved.

Costs are counted, not timed (see :mod:`.._workload.computation`), so any growth is the code's: the
gate fails on growth beyond ``--workload-cost-tolerance`` (0: any), never on shrinking. Costs
come from the trace that gives the compute hash, so they follow its rules: none on either side
(not traced there) agrees with any, and a data-dependent
workload's are not compared (they follow the data).
"""

from __future__ import annotations

from collections.abc import Iterator

from .._workload.computation import Costs
from .document import SnapshotDocument, SnapshotEntry

#: (label, field) of the compared costs, in the order messages give them.
METRICS = (
    ("peak memory", "peak_bytes"),
    ("device peak memory", "device_peak_bytes"),
    ("bytes written", "bytes_written"),
    ("bytes read", "bytes_read"),
)


def grew(old: int | None, new: int | None, tolerance: float) -> bool:
    """More than ``tolerance`` (a fraction) above the stored value; a device peak on one side
    only (another device) is a difference."""
    if old is None or new is None:
        return old != new
    return new > old * (1 + tolerance)


def costs_agree(old: SnapshotEntry, new: SnapshotEntry, tolerance: float) -> bool:
    """No cost of the recorded ``new`` grew beyond ``tolerance`` over the stored ``old``."""
    if old.data_dependent or new.data_dependent:
        return True
    a, b = old.costs, new.costs
    if a is None or b is None:
        return True
    return not any(grew(getattr(a, f), getattr(b, f), tolerance) for _, f in METRICS)


def format_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _moved(label: str, old: int | None, new: int | None) -> str:
    if old is None or new is None:
        shown = (format_bytes(v) if v is not None else "unknown" for v in (old, new))
        return f"{label} {' -> '.join(shown)}"
    sign = "+" if new >= old else "-"
    delta = f"{sign}{format_bytes(abs(new - old))}"
    ratio = f", {new / old:.2f}x" if old else ""
    return f"{label} {format_bytes(old)} -> {format_bytes(new)} ({delta}{ratio})"


def _op_counts(a: Costs, b: Costs) -> str | None:
    before, after = dict(a.ops), dict(b.ops)
    moved = [
        f"{after.get(name, 0) - before.get(name, 0):+d} {name}"
        for name in sorted(before.keys() | after.keys())
        if before.get(name, 0) != after.get(name, 0)
    ]
    return "operations " + ", ".join(moved) if moved else None


def cost_lines(old: SnapshotEntry, new: SnapshotEntry) -> Iterator[str]:
    """One line per cost that moved (``peak memory 1.0 MiB -> 9.0 MiB (+8.0 MiB, 9.00x)``),
    then the operation counts that changed."""
    a, b = old.costs, new.costs
    if old.data_dependent or new.data_dependent:
        return
    if a is None or b is None:
        return
    for label, name in METRICS:
        before, after = getattr(a, name), getattr(b, name)
        if before != after:
            yield _moved(label, before, after)
    counts = _op_counts(a, b)
    if counts is not None:
        yield counts
    if a.partial or b.partial:
        yield "costs are over the operations before the first that follows the data"


def shrunk(old: SnapshotDocument, new: SnapshotDocument) -> list[str]:
    """For each recorded workload whose stored costs were higher, what shrank (a note: the
    gate passes it)."""
    stored = {(e.parent, e.hash, e.depth): e for e in old.entries}
    lines = []
    for entry in new.entries:
        before = stored.get((entry.parent, entry.hash, entry.depth))
        if before is None or not costs_agree(before, entry, 0.0) or before.costs == entry.costs:
            continue
        moved = [line for line in cost_lines(before, entry) if " -> " in line]
        lines += [f"{entry.label}: {'; '.join(moved)}"] if moved else []
    return lines
