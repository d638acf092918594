"""Rows to data: the stored ``Workload`` of each row, parents before children."""

from __future__ import annotations

from .._fingerprint.libraries import library_versions
from .._perf import Measurement, summarize
from .._workload.modules import ModuleTable, closure, top_packages
from .._workload.paths import name_first
from .._workload.timing import OBSERVED, OFF, Measured, Timing, not_measured
from .._workload.workload import TestWorkloads, UserKey, Workload
from .rows import Entry, RowTable
from .states import State


def to_test_workloads(nodeid: str, table: RowTable, descriptions: ModuleTable) -> TestWorkloads:
    """The rows of ``table`` in order of first call, with the descriptions of their trees
    (taken from ``descriptions``, every module description the test read)."""
    entries = sorted(table.entries(), key=lambda e: e.done.order)
    position = {e.row: i for i, e in enumerate(entries)}
    modules = closure(descriptions, (e.done.identity.structure_hash for e in entries))
    return TestWorkloads(
        nodeid,
        tuple(_workload(e, position, table.timing) for e in entries),
        modules=modules,
        libraries=library_versions(top_packages(modules)) if entries else {},
    )


def _timing(entry: Entry) -> Timing | None:
    if entry.measurement is not None:
        return entry.measurement.timing
    if entry.caller is None or entry.untimed or not entry.samples_ns:
        return None
    samples = [ns / 1e9 for ns in entry.samples_ns]
    return summarize(samples, entry.done.identity.device, "recorded calls")


def _measured(entry: Entry, timing: bool) -> Measured | None:
    """How a row's numbers were obtained: a root's say its measurement (None before it, or
    for a failed test), a submodule's are its observed calls'."""
    if entry.caller is None:
        return None if entry.measurement is None else entry.measurement.measured
    if not timing:
        how = OFF
    elif entry.untimed:
        how = not_measured("it ran off the CPU, where a clock around a call does not time it")
    elif not entry.samples_ns:
        how = not_measured("its calls were traced (which slows them): a later call times it")
    elif entry.counted:
        observed = len(entry.samples_ns)
        how = (
            f"{OBSERVED} ({observed} of {entry.calls}: the later calls of a settled root run "
            "its submodules unhooked)"
        )
    else:
        how = OBSERVED
    return Measured(how, not_measured("FLOPs are counted for top-level workloads"))


def _workload(entry: Entry, position: dict[int, int], timing: bool) -> Workload:
    done, identity, caller = entry.done, entry.done.identity, entry.caller
    measured = entry.measurement or Measurement()
    return Workload(
        name=done.name,
        class_name=identity.class_name,
        depth=done.depth,
        parent=None if caller is None else caller.done.identity.hash,
        structure_hash=identity.structure_hash,
        structure_hash_without_dtypes=identity.structure_hash_without_dtypes,
        input_signature=identity.signature,
        hash=identity.hash,
        calls=entry.calls,
        params=identity.params,
        arg_names=identity.arg_names,
        location=done.location,
        # (calls counted from a settled root's were not timed: no total)
        total_time_s=None if not timing or entry.untimed or entry.counted else entry.total_ns / 1e9,
        submodules=identity.submodules,
        user_keys=tuple(UserKey(k, first, n) for k, first, n in entry.user_keys.values()),
        alternates=identity.alternates,
        timing=_timing(entry),
        flops=measured.flops,
        peak_memory_bytes=measured.peak_memory_bytes,
        output_signature=identity.output,
        caller=None if caller is None else position[caller.row],
        measured=_measured(entry, timing),
        compute_hash=None if entry.computation is None else entry.computation.hash,
        data_dependent=entry.life.state is State.DATA_DEPENDENT,
        compute_unknown=_compute_unknown(entry),
        compute_partial=None if entry.computation is None else entry.computation.coverage(),
        computation=entry.computation,
        costs=None if entry.computation is None else entry.computation.costs,
        paths=name_first(done.name, entry.paths),
    )


def _compute_unknown(entry: Entry) -> str | None:
    if entry.computation is not None:
        return None
    return entry.compute_unknown or "its operations were not traced"
