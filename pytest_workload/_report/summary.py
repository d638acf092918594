"""The terminal report: the session summary, the gate line, notes and JUnit properties."""

from __future__ import annotations

from collections.abc import Sequence

from .._core.notes import Note, NoteKind
from .._core.text import (
    _INDENT,
    Commands,
    _count,
    format_duration,
    one_line,
    prefix_length,
    short,
    terminal_text,
)
from .._workload.timing import MIN_SAMPLES, Timing
from .._workload.workload import TestWorkloads, Workload


def format_params(count: int, size: int) -> str:
    mb = size / 1e6
    shown = "<0.1 MB" if 0 < mb < 0.1 else f"{mb:.1f} MB"
    return f"{count:,} ({shown})"


def _short_class(qualified: str) -> str:
    return qualified.rsplit(".", 1)[-1]


def format_flops(flops: int) -> str:
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if flops >= scale:
            return f"{flops / scale:.2f} {unit}"
    return f"{flops} FLOP"


def format_timing(t: Timing) -> str:
    where = "recorded calls" if t.source == "recorded calls" else "replayed"
    if t.n == 1:
        return f"{format_duration(t.median_s)} (n=1, {where}, {t.device})"
    spread = f"IQR {format_duration(t.iqr_s)}"
    if t.has_interval:  # fewer samples allow no 95% interval of the median
        spread += f", 95% CI {format_duration(t.ci_low_s)}–{format_duration(t.ci_high_s)}"
    return f"median {format_duration(t.median_s)}, {spread} (n={t.n}, {where}, {t.device})"


def _workload_lines(w: Workload, indent: str, hash_len: int) -> list[str]:
    executed = f"executed {w.calls}×"
    if w.total_time_s is not None:
        executed += f" – {format_duration(w.total_time_s)}"
    fields = [
        ("Class", one_line(f"{_short_class(w.class_name)} ({w.class_name})")),
        ("Location", None if w.location is None else one_line(w.location)),
        ("Parameters", format_params(w.params.count, w.params.bytes)),
        ("Input", one_line(w.input_signature.format())),
        ("Hash", short(w.hash, hash_len)),
        ("Timing", None if w.timing is None else format_timing(w.timing)),
        ("FLOPs", None if w.flops is None else format_flops(w.flops)),
        (
            "Peak memory",
            None if w.peak_memory_bytes is None else f"{w.peak_memory_bytes / 1e6:.1f} MB",
        ),
    ]
    lines = [f"{indent}{one_line(w.label)} ({executed})"]
    lines += [f"{indent}{_INDENT}{k + ':':<13}{v}" for k, v in fields if v is not None]
    return lines


def _tree_lines(test: TestWorkloads, w: Workload, indent: str, hash_len: int) -> list[str]:
    lines = _workload_lines(w, indent, hash_len)
    for child in test.children(w):
        lines.append("")
        lines += _tree_lines(test, child, indent + _INDENT * 2, hash_len)
    return lines


def render_session(tests: Sequence[TestWorkloads]) -> list[str]:
    """The "Workloads discovered" section: per test, a tree of workloads."""
    hash_len = prefix_length(w.hash for t in tests for w in t)
    lines: list[str] = []
    for test in tests:
        if not test.workloads:
            continue
        if lines:
            lines.append("")
        lines.append(one_line(test.nodeid))
        for root in test.roots():
            lines += _tree_lines(test, root, _INDENT, hash_len)
            lines.append("")
        lines.pop()
    return lines


def render_gate(gated: bool, failed: int, regressions: int) -> str:
    """What the workload gate found, never a check that did not run."""
    if not gated:
        return "workload gate off: nothing was checked (--workload-snapshot checks)"
    if not failed:
        return "workload gate: no test failed it"
    return (
        f"workload gate: {_count(failed, 'test')} failed it, with "
        f"{_count(regressions, 'performance regression')}"
    )


def render_summary(tests: Sequence[TestWorkloads], collapses: int, gate: str) -> list[str]:
    """The section for a large suite: counts, what the gate found, and where the full tree
    is."""
    recorded = [t for t in tests if t.workloads]
    workloads = [w for t in recorded for w in t]
    roots = sum(1 for w in workloads if w.parent is None)
    distinct = len({w.hash for w in workloads})
    found = "no collapse" if not collapses else _count(collapses, "collapse")
    hashes = f"{distinct} distinct hash{'' if distinct == 1 else 'es'}"
    return [
        f"{_count(len(recorded), 'test')} recorded {_count(len(workloads), 'workload')} "
        f"({roots} top-level, {hashes}); {found} across the session",
        gate,
        "each test's tree: --workload-report=tree; every field: --workload-json=PATH",
    ]


def render_not_timed(count: int, budget_s: float) -> str:
    """The line that says the session's timing budget left workloads untimed."""
    these = "workload was" if count == 1 else "workloads were"
    return (
        f"pytest-workload: {count} {these} not timed: the session's timing budget "
        f"(--workload-session-budget={budget_s:g}) was spent; each has its hashes and FLOPs, "
        'and says so in the JSON report ("measured": {"timing": "not measured: ..."})'
    )


def render_not_replayed(count: int) -> str:
    """The line that says top-level workloads were not replayed beside other xdist workers."""
    these = "workload was" if count == 1 else "workloads were"
    return (
        f"pytest-workload: {count} top-level {these} not replayed for timing: xdist workers "
        "share the cores, which biases timings, so each is timed from its test's own calls "
        "where any were observed, neither judged against a baseline nor written as one, and "
        'says so in the JSON report ("measured": {"timing": ...}); for replayed timings run '
        "in one process (-p no:xdist) or pass --workload-perf=strict"
    )


def junit_properties(test: TestWorkloads) -> list[tuple[str, str]]:
    """``record_property`` pairs for a test's workloads, for JUnit XML and CI dashboards."""
    props: list[tuple[str, str]] = []
    for i, w in enumerate(test.workloads):
        prefix = f"workload[{i}] {w.name}"
        props += [(f"{prefix} hash", w.hash), (f"{prefix} input", w.input_signature.format())]
        if w.timing is not None:
            props.append((f"{prefix} median_s", f"{w.timing.median_s:.6g}"))
            props.append((f"{prefix} ci95_s", f"{w.timing.ci_low_s:.6g} {w.timing.ci_high_s:.6g}"))
        if w.flops is not None:
            props.append((f"{prefix} flops", str(w.flops)))
    return props


def _snapshots(count: int) -> str:
    return _count(count, "workload snapshot")


def render_unchecked(
    kept: int, *, gate: bool, update: bool, recorded: int, commands: Commands
) -> str | None:
    """The one line that says which workload snapshots were not checked, or not written:
    syrupy counts the kept ones as passed (they were used, left as they are)."""
    counted = f" (syrupy counts {'it' if kept == 1 else 'them'} as passed)"
    if not gate and update and (recorded or kept):
        left = (
            f"; {_snapshots(kept)} left as {'it is' if kept == 1 else 'they are'}{counted}"
            if kept
            else ""
        )
        return (
            "--snapshot-update wrote no workload snapshot: they are written only with "
            f"--workload-snapshot; run {commands.accept}{left}"
        )
    if gate and update and not recorded and not kept:
        return (
            "--snapshot-update wrote no workload snapshot: no test recorded workloads (tests "
            "marked @pytest.mark.workloads or using the workloads fixture record them, every "
            "test with --workload-record=all)"
        )
    if not gate and kept:
        return (
            f"{_snapshots(kept)} not checked{counted}: workload snapshots are checked only with "
            "--workload-snapshot"
        )
    if kept:
        return (
            f"{_snapshots(kept)} not checked{counted}: "
            f"{'its test' if kept == 1 else 'their tests'} failed"
        )
    return None


#: How the terminal counts each kind of performance note: what one is, and what to do.
_NOTE_COUNTS: dict[NoteKind, tuple[str, str, str]] = {
    "baseline recorded": ("timing baseline", "recorded", ""),
    "baseline refreshed": ("timing baseline", "refreshed", "they had drifted"),
    "baseline not written: xdist": (
        "timing baseline",
        "not written",
        "timed while xdist workers shared this machine; write them with {baseline} (or pass "
        "--workload-perf=strict)",
    ),
    "baseline not written: too few samples": (
        "timing baseline",
        "not written",
        f"timed on fewer than the {MIN_SAMPLES} samples a verdict needs",
    ),
    "no baseline": ("workload", "without a timing baseline", "record them with {baseline}"),
    "faster": ("workload", "faster than its baseline", "refresh them with {baseline}"),
    "not judged: xdist": (
        "regression",
        "not failed",
        "timed while xdist workers shared this machine; judge it with {run} (or pass "
        "--workload-perf=strict)",
    ),
    "not judged: too few samples": (
        "timing",
        "not judged",
        f"it or its baseline has fewer than the {MIN_SAMPLES} samples a verdict needs",
    ),
    "unreadable baseline": ("timing baseline", "unreadable", "left out of nearest-shape lookups"),
    "measurement": ("workload", "measured approximately or not at all", ""),
}


def render_note_counts(notes: Sequence[Note], commands: Commands, json: bool) -> list[str]:
    """One line per kind of note, counting each text once (a workload that five tests run
    is one), and where each note is: a suite has as many notes as workloads."""
    texts: dict[NoteKind, set[str]] = {}
    for note in notes:
        texts.setdefault(note.kind, set()).add(note.text)
    lines = []
    for kind, (what, done, why) in _NOTE_COUNTS.items():
        if kind in texts:
            count = len(texts[kind])
            why = why.format(baseline=commands.baseline, run=commands.run)
            lines.append(f"{_count(count, what)} {done}" + (f": {why}" if why else ""))
    if lines:
        where = "the JSON report" if json else "--workload-json=PATH"
        lines.append(f'each note, with its test and workload: {where} ("notes")')
    return lines


def render_notes(notes: Sequence[Note]) -> list[str]:
    """Each note once, in the order first seen, after the test that first showed it (and how
    many more did): a workload that five tests run gets one note, not five. A note's own line
    breaks are kept, so each user-chosen part of it must already be ``one_line``."""
    seen: dict[str, list[str]] = {}
    for note in notes:
        nodeids = seen.setdefault(note.text, [])
        if note.nodeid not in nodeids:
            nodeids.append(note.nodeid)
    lines = []
    for text, nodeids in seen.items():
        more = len(nodeids) - 1
        where = one_line(nodeids[0]) + (f" (and {_count(more, 'more test')})" if more else "")
        lines.append(terminal_text(f"{where}: {text}"))
    return lines
