"""A workload's costs, and the table of cost metrics (:data:`METRICS`; what each counts:
docs/explanation/timing.md, "Costs"). Each metric is one :class:`Metric` entry holding all that
is done with it (its source, its JSON field, how a value is written, compared and worded): a new
metric is one entry here, plus its counting where its source is."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .._core.codec import Record, codec
from .._core.errors import WorkloadDataError
from .._core.strict_json import Json, read_count, read_field

#: Counts by site (or by name), sorted.
Sites = tuple[tuple[str, int], ...]
#: A metric's value: an amount, or counts by site.
Value = int | Sites
#: Sites named per changed metric before the rest are counted.
MAX_SITES = 3


def format_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _counts(value: object, what: str) -> Sites:
    if not isinstance(value, dict) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in value.values()
    ):
        raise WorkloadDataError(f"costs: {what!r} must map names to counts > 0")
    return tuple(sorted(value.items()))


@dataclass(frozen=True)
class Metric:
    """One cost metric.

    ``source``: ``"trace"``, counted by the tracer's spans (an attribute of
    ``_tracing.cost_count.Span`` named ``field``), or ``"device"``, read from the device
    by the recorder. ``absent``: what a missing JSON field means: an error, a count not taken
    (another device: a count on one side only is a change), or nothing counted (such a field is
    written only when its count is not 0). ``whole_call``: counted over every operation of the
    call, also after its list stops where the operations follow the data (the others are over
    the listed operations). ``rank``: where its line comes in a message (lowest first)."""

    field: str
    label: str
    rank: int
    unit: Callable[[int], str] = "{:,}".format
    sites: bool = False
    source: Literal["trace", "device"] = "trace"
    absent: Literal["error", "unknown", "zero"] = "error"
    whole_call: bool = False

    def of(self, counted: int | Mapping[str, int]) -> Value:
        """The value of what was counted (an amount, or counts by site)."""
        if isinstance(counted, int):
            return counted
        return tuple(sorted((k, n) for k, n in counted.items() if n))

    @property
    def zero(self) -> Value:
        return () if self.sites else 0

    def total(self, value: Value) -> int:
        return value if isinstance(value, int) else sum(n for _, n in value)

    def written(self, value: Value | None) -> bool:
        return value is not None and (self.absent != "zero" or self.total(value) != 0)

    def read(self, data: Mapping[str, Any]) -> Value | None:
        if self.field not in data and self.absent != "error":
            return None if self.absent == "unknown" else self.zero
        if self.sites:
            return _counts(data[self.field], self.field)
        return read_count(data, self.field, 0)

    def grew(self, old: Value | None, new: Value | None, tolerance: float) -> bool:
        """More than ``tolerance`` (a fraction) above the stored value; a count on one side
        only (another device) is a difference."""
        if old is None or new is None:
            return old != new
        return self.total(new) > self.total(old) * (1 + tolerance)

    def moved(self, old: Value | None, new: Value | None) -> str | None:
        """``peak memory 1.0 MiB -> 9.0 MiB (+8.0 MiB, 9.00x)``, ``syncs 0 -> 1: item at
        model.py:42``; None when the counts are equal."""
        if old is None or new is None:
            if old == new:
                return None
            shown = (self.unit(self.total(v)) if v is not None else "unknown" for v in (old, new))
            return f"{self.label} {' -> '.join(shown)}"
        before, after = self.total(old), self.total(new)
        if before == after:
            return None
        line = f"{self.label} {self.unit(before)} -> {self.unit(after)}"
        if isinstance(old, tuple) and isinstance(new, tuple):
            return f"{line}: {_changed_sites(old, new, grew=after > before)}"
        sign = "+" if after >= before else "-"
        ratio = f", {after / before:.2f}x" if before else ""
        return f"{line} ({sign}{self.unit(abs(after - before))}{ratio})"


def _changed_sites(old: Sites, new: Sites, *, grew: bool) -> str:
    """The sites whose count moved the way the total did, in order."""
    before, after = dict(old), dict(new)
    moved = [
        site
        for site in sorted(before.keys() | after.keys())
        if (after.get(site, 0) > before.get(site, 0)) == grew
        and after.get(site, 0) != before.get(site, 0)
    ]
    more = len(moved) - MAX_SITES
    return ", ".join(moved[:MAX_SITES]) + (f" and {more} more" if more > 0 else "")


#: The cost metrics, in the order of their JSON fields.
METRICS = (
    Metric("bytes_read", "bytes read", rank=3, unit=format_bytes),
    Metric("bytes_written", "bytes written", rank=2, unit=format_bytes),
    Metric("peak_bytes", "peak memory", rank=0, unit=format_bytes),
    Metric(
        "device_peak_bytes",
        "device peak memory",
        rank=1,
        unit=format_bytes,
        source="device",
        absent="unknown",
    ),
    # host syncs (data-dependent events, copies to the host): by operation and the user's
    # line that ran it, over the whole call
    Metric("syncs", "syncs", rank=4, sites=True, absent="zero", whole_call=True),
)
#: The metrics in the order a message gives them.
BY_RANK = tuple(sorted(METRICS, key=lambda m: m.rank))


def _write_values(values: tuple[tuple[str, Value], ...]) -> Json:
    counted = dict(values)
    return {m.field: _json(counted[m.field]) for m in METRICS if m.written(counted.get(m.field))}


def _json(value: Value) -> Json:
    return value if isinstance(value, int) else dict(value)


def _read_values(d: Mapping[str, Any]) -> tuple[tuple[str, Value], ...]:
    return Costs.of((), partial=False, **{m.field: m.read(d) for m in METRICS}).values


def _read_ops(d: Mapping[str, Any]) -> Sites:
    return _counts(read_field(d, "ops", dict), "ops")


@dataclass(frozen=True)
class Costs(Record):
    """``values``: each metric's value by its field, in :data:`METRICS` order (a count not
    taken is absent); ``ops``: (operation name, count), sorted by name."""

    values: tuple[tuple[str, Value], ...] = field(
        metadata=codec(flatten=True, write=_write_values, read=_read_values)
    )
    partial: bool = field(default=False, metadata=codec(omit=True))
    ops: Sites = field(default=(), metadata=codec(write=dict, read=_read_ops))

    what: ClassVar[str] = "costs"

    @classmethod
    def of(cls, ops: Sites = (), *, partial: bool = False, **counted: Value | None) -> Costs:
        """Costs from each metric's value by its field (None, or left out: not counted)."""
        unknown = counted.keys() - {m.field for m in METRICS}
        if unknown:
            raise TypeError(f"not cost metrics: {', '.join(sorted(unknown))}")
        filled = {m.field: m.zero for m in METRICS if m.absent == "zero"}
        filled.update((k, v) for k, v in counted.items() if v is not None)
        return cls(
            tuple((m.field, filled[m.field]) for m in METRICS if m.field in filled), partial, ops
        )

    def __getitem__(self, field: str) -> Value | None:
        """The value of the metric ``field``; None where it was not counted."""
        return dict(self.values).get(field)

    def with_value(self, field: str, value: Value) -> Costs:
        return Costs.of(self.ops, partial=self.partial, **{**dict(self.values), field: value})
