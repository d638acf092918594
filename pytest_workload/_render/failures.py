"""Failure and note texts: collapses, snapshot changes, drift, missing baselines."""

from __future__ import annotations

from collections.abc import Sequence

from .._model.baseline import Baseline
from .._model.canonical import Json
from .._model.hashes import prefix_length, short
from .._model.timing import MIN_SAMPLES, Timing
from .._model.workload import Workload
from .._verdict.collapse import Collapse
from .._verdict.diff import Change, format_key
from .._verdict.drift import Drift
from .commands import Commands
from .escape import one_line
from .report import _INDENT, _count, format_duration


def _describe(w: Workload) -> str:
    return one_line(f"{w.label} ({w.class_name}), input {w.input_signature.format()}")


def _key(key: Json) -> str:
    return one_line(format_key(key))


def render_collapse(collapse: Collapse) -> str:
    """The failure text of a hash collapse, a user key collapse or an unstable user key."""
    a, b = collapse.first, collapse.second
    if collapse.kind == "unstable user key":
        assert a.user_key is not None and b.user_key is not None
        return "\n".join(
            [
                "unstable user key: one workload got different keys from pytest_workload_key:",
                f"  workload: {_describe(a.workload)}, hash {short(a.workload.hash)}",
                f"  - {one_line(a.nodeid)}, call {a.user_key.first_call}: {_key(a.user_key.key)}",
                f"  - {one_line(b.nodeid)}, call {b.user_key.first_call}: {_key(b.user_key.key)}",
            ]
        )
    if collapse.kind == "user key collapse":
        assert a.user_key is not None
        head = f"user key collapse: two distinct workloads share the key {_key(a.user_key.key)}"
        n = prefix_length([a.workload.hash, b.workload.hash])
        rows = [
            f"  - {one_line(s.nodeid)}: {_describe(s.workload)}, hash {short(s.workload.hash, n)}"
            for s in (a, b)
        ]
    else:
        head = f"workload hash collapse: two distinct workloads share the hash {a.workload.hash}"
        n = prefix_length([a.workload.structure_hash, b.workload.structure_hash])
        rows = [
            f"  - {one_line(s.nodeid)}: {_describe(s.workload)}, "
            f"structure {short(s.workload.structure_hash, n)}"
            for s in (a, b)
        ]
    return "\n".join([head, *rows])


def _entry_title(change: Change) -> str:
    e = change.entry
    return one_line(f"{e.label} ({e.class_name})")


#: Submodule changes listed per message before the rest are summarised in a count.
MAX_SUBMODULE_CHANGES = 8


def _change_lines(change: Change, hash_len: int) -> list[str]:
    if change.kind == "changed":
        assert change.old is not None and change.new is not None
        head = (
            f"changed:  {_entry_title(change)} {short(change.old.hash, hash_len)} -> "
            f"{short(change.new.hash, hash_len)}"
        )
        return [head, *(f"{_INDENT}{one_line(d)}" for d in change.details)]
    e = change.entry
    return [
        f"{change.kind + ':':<9} {_entry_title(change)} {short(e.hash, hash_len)}, input "
        f"{one_line(e.input_signature.format())}",
        *(f"{_INDENT}{one_line(d)}" for d in change.details),
    ]


def render_changes(changes: Sequence[Change]) -> list[str]:
    """Root changes in full; submodule changes after them, the first few in full."""
    hash_len = prefix_length(h for c in changes for e in (c.old, c.new) if e for h in (e.hash,))
    roots = [c for c in changes if c.entry.depth == 0]
    subs = [c for c in changes if c.entry.depth > 0]
    lines = [line for c in roots for line in _change_lines(c, hash_len)]
    lines += [line for c in subs[:MAX_SUBMODULE_CHANGES] for line in _change_lines(c, hash_len)]
    if len(subs) > MAX_SUBMODULE_CHANGES:
        lines.append(
            f"... and {len(subs) - MAX_SUBMODULE_CHANGES} more submodule workloads changed "
            "(--workload-json has them all)"
        )
    return lines


def signature_note(changes: Sequence[str]) -> str:
    """The note for a table of a test recorded by ``--workload-record=all`` that differs from
    the stored one in call signatures only."""
    return (
        f"call signature differs from the snapshot's: {'; '.join(one_line(c) for c in changes)}; "
        "not judged for a test recorded by --workload-record=all: its inputs may follow the "
        "test's data; mark the test to gate it"
    )


def update_hint(commands: Commands) -> str:
    return f"run {commands.accept} to accept the recorded workloads"


def _workload_title(w: Workload) -> str:
    return f"{_describe(w)}, hash {short(w.hash)}"


_TIMES = {1: "once", 2: "twice"}


def _retimed(t: Timing) -> str:
    if not t.retimed:
        return ""
    times = _TIMES.get(t.retimed, f"{t.retimed} times")
    return f"; re-timed {times}, judged on every timing's samples"


def _evidence(current: Timing, drift: Drift) -> str:
    """Which evidence decided, in the words of the failure message."""
    if drift.evidence == "flops":
        assert drift.flops_ratio is not None
        return (
            f"FLOPs {drift.flops_ratio:.2f}x the baseline's: counted from shapes, so no "
            f"machine load explains it (wall {drift.wall_ratio:.2f}x)"
        )
    if drift.evidence == "calibrated":
        machine = "" if drift.machine_ratio is None else f", the kernel {drift.machine_ratio:.2f}x"
        return (
            f"time relative to the calibration kernel {drift.ratio:.2f}x (wall "
            f"{drift.wall_ratio:.2f}x{machine}){_retimed(current)}"
        )
    return f"wall {drift.ratio:.2f}x (no calibration to compare){_retimed(current)}"


def _interval(t: Timing) -> str:
    if not t.has_interval:
        return f"n={t.n}, too few for an interval"
    return f"95% CI {format_duration(t.ci_low_s)}–{format_duration(t.ci_high_s)} (n={t.n})"


def render_regression(
    w: Workload, baseline: Timing, drift: Drift, device: str, commands: Commands
) -> str:
    current = w.timing
    assert current is not None
    ratio = f"{drift.ratio:.2f}x slower" + (" calibrated" if drift.evidence == "calibrated" else "")
    if current.has_interval and baseline.has_interval:
        ratio += (
            f" (95% interval of the ratio {drift.ratio_low:.2f}–{drift.ratio_high:.2f}x; "
            f"tolerance {drift.tolerance:.0%})"
        )
    else:
        ratio += f" (tolerance {drift.tolerance:.0%})"
    return "\n".join(
        [
            f"performance regression: {_workload_title(w)}",
            f"  decided by {_evidence(current, drift)}",
            f"  median {format_duration(current.median_s)} vs baseline "
            f"{format_duration(baseline.median_s)}: {ratio}",
            f"  current {_interval(current)}, baseline {_interval(baseline)}",
            f"  on {device}; accept the new timing with {commands.baseline}",
        ]
    )


def render_faster(w: Workload, baseline: Timing, drift: Drift, commands: Commands) -> str:
    assert w.timing is not None
    line = (
        f"{_workload_title(w)} is {1 / drift.ratio:.2f}x faster than its baseline "
        f"({format_duration(w.timing.median_s)} vs {format_duration(baseline.median_s)})"
    )
    return line + f"; refresh the baseline with {commands.baseline}"


def render_missing_baseline(
    w: Workload, device: str, nearest: tuple[Baseline, float] | None, commands: Commands
) -> str:
    # the same text in every test that runs the workload (whatever a test calls its model),
    # so the session shows it once
    workload = (
        one_line(f"{w.class_name}, input {w.input_signature.format()}") + f", hash {short(w.hash)}"
    )
    line = f"no timing baseline for {workload} on {device}"
    if nearest is not None:
        other, factor = nearest
        expected = other.timing.median_s * factor
        line += (
            f"; nearest compatible baseline: {one_line(f'{other.name} {other.input}')} "
            f"({format_duration(other.timing.median_s)}) at distance factor {factor:g}, so "
            f"about {format_duration(expected)} expected if time scales with size"
        )
    return f"{line}; record one with {commands.baseline}"


def render_too_few(w: Workload, baseline: Timing, drift: Drift) -> str:
    """A timing compared with its baseline on too few samples to say anything."""
    current = w.timing
    assert current is not None
    return (
        f"{_workload_title(w)}: {drift.ratio:.2f}x its baseline, not judged: timed on "
        f"{_count(current.n, 'sample')} against the baseline's {baseline.n}, and a verdict "
        f"needs {MIN_SAMPLES} on each side"
    )
