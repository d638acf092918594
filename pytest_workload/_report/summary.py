"""The terminal report."""

from __future__ import annotations

from collections.abc import Sequence

from .._core.notes import Note, NoteKind
from .._core.text import (
    INDENT,
    Commands,
    format_duration,
    one_line,
    plural,
    prefix_length,
    short,
    terminal_text,
)
from .._workload.signature import short_type
from .._workload.timing import MIN_SAMPLES, Timing
from .._workload.workload import TestWorkloads, Workload
from .session_report import count_left_out

#: Recorded tests up to which ``--workload-report=auto`` shows every test's tree.
TREE_TESTS = 20
#: Lines of one test's tree that ``--workload-report=auto`` shows before it folds the rest.
TREE_LINES = 40


def format_flops(flops: int) -> str:
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if flops >= scale:
            return f"{flops / scale:.2f} {unit}"
    return f"{flops} FLOP"


def format_timing(t: Timing) -> str:
    where = "recorded calls" if t.source == "recorded calls" else "replayed"
    if t.threads is not None:
        where += f" on {plural(t.threads, 'thread')}"
    if t.n == 1:
        return f"{format_duration(t.median_s)} (n=1, {where}, {t.device})"
    spread = f"IQR {format_duration(t.iqr_s)}"
    if t.has_interval:  # fewer samples allow no 95% interval of the median
        spread += f", 95% CI {format_duration(t.ci_s[0])}–{format_duration(t.ci_s[1])}"
    return f"median {format_duration(t.median_s)}, {spread} (n={t.n}, {where}, {t.device})"


def _tree_blocks(test: TestWorkloads, w: Workload, indent: str, hash_len: int) -> list[list[str]]:
    """One block a workload (its label, then its fields), its children's after it."""
    executed = f"executed {w.calls}×"
    if w.total_time_s is not None:
        executed += f" – {format_duration(w.total_time_s)}"
    mb = w.params.bytes / 1e6
    size = "<0.1 MB" if 0 < mb < 0.1 else f"{mb:.1f} MB"
    fields = [
        ("Class", one_line(f"{short_type(w.class_name)} ({w.class_name})")),
        ("Location", None if w.location is None else one_line(w.location)),
        ("Parameters", f"{w.params.count:,} ({size})"),
        ("Input", one_line(w.input)),
        ("Hash", short(w.hash, hash_len)),
        ("Coverage", None if w.compute_partial is None else one_line(w.compute_partial)),
        ("Timing", None if w.timing is None else format_timing(w.timing)),
        ("FLOPs", None if w.flops is None else format_flops(w.flops)),
        (
            "Peak memory",
            None if w.peak_memory_bytes is None else f"{w.peak_memory_bytes / 1e6:.1f} MB",
        ),
    ]
    block = [f"{indent}{one_line(w.label)} ({executed})"]
    block += [f"{indent}{INDENT}{k + ':':<13}{v}" for k, v in fields if v is not None]
    blocks = [block]
    for child in test.children(w):
        blocks += _tree_blocks(test, child, indent + INDENT * 2, hash_len)
    return blocks


def render_session(tests: Sequence[TestWorkloads], fold: int | None = None) -> list[str]:
    """With ``fold``, a test's tree stops after the workload that reaches that many lines, and
    one line counts the rest and says where they are."""
    hash_len = prefix_length(w.hash for t in tests for w in t)
    lines: list[str] = []
    for test in tests:
        if not test.workloads:
            continue
        if lines:
            lines.append("")
        lines.append(one_line(test.nodeid))
        start = len(lines)
        blocks = [b for root in test.roots() for b in _tree_blocks(test, root, INDENT, hash_len)]
        for shown, block in enumerate(blocks):
            if fold is not None and shown and len(lines) - start >= fold:
                lines.append(
                    f"{INDENT}… {plural(len(blocks) - shown, 'more workload')} of this test: "
                    "--workload-report=tree shows every one, --workload-json=PATH every field"
                )
                break
            lines += [""] * bool(shown) + block
    return lines


def render_report(
    tests: Sequence[TestWorkloads],
    mode: str,
    *,
    collapses: int,
    gated: bool,
    failed: int,
    regressions: int,
) -> list[str]:
    """The "Workloads discovered" section: trees, or counts and what the gate found (never a
    check that did not run)."""
    recorded = [t for t in tests if t.workloads]
    if mode == "tree":
        return render_session(tests)
    if mode == "auto" and len(recorded) <= TREE_TESTS:
        return render_session(tests, fold=TREE_LINES)
    if not recorded:
        return []
    if not gated:
        gate = "workload gate off: nothing was checked (--workload-snapshot checks)"
    elif not failed:
        gate = "workload gate: no test failed it"
    else:
        gate = (
            f"workload gate: {plural(failed, 'test')} failed it, with "
            f"{plural(regressions, 'performance regression')}"
        )
    workloads = [w for t in recorded for w in t]
    roots = sum(1 for w in workloads if w.parent is None)
    distinct = len({w.hash for w in workloads})
    found = "no collapse" if not collapses else plural(collapses, "collapse")
    hashes = f"{distinct} distinct hash{'' if distinct == 1 else 'es'}"
    # less those xdist workers did not replay: a suite has one count with and without xdist
    unmeasured = sum(
        1
        for w in workloads
        if w.parent is None
        and w.measured is not None
        and w.measured.timing.kind not in ("replayed", "off")
        and w.measured.timing.left_out != "xdist"
    )
    if unmeasured:
        hashes += f", {unmeasured} top-level not timed by a replay"
    stopped = sum(1 for t in recorded if any(w.compute_partial for w in t.roots()))
    if stopped:
        found += f"; {plural(stopped, 'test')} with a compute hash that stops early (below)"
    return [
        f"{plural(len(recorded), 'test')} recorded {plural(len(workloads), 'workload')} "
        f"({roots} top-level, {hashes}); {found} across the session",
        gate,
        "each test's tree: --workload-report=tree; every field: --workload-json=PATH",
    ]


def render_stops(tests: Sequence[TestWorkloads]) -> list[str]:
    """What a test's top-level workloads run after a data-dependent event (a value read, a
    value-shaped operation) is not gated."""
    lines = []
    for test in tests:
        stops = [w for w in test.roots() if w.compute_partial]
        if stops:
            first = stops[0]
            more = f" (and {plural(len(stops) - 1, 'more workload')})" if len(stops) > 1 else ""
            lines.append(
                f"{one_line(test.nodeid)}: {one_line(first.label)}'s compute hash "
                f"{one_line(first.compute_partial or '')}{more}; what runs after it is not gated"
            )
    return lines


def render_counts(
    tests: Sequence[TestWorkloads], budget_s: float | None, commands: Commands
) -> list[str]:
    lines = []
    used = [t for t in tests if t.fixtures]
    if used:
        names = ", ".join(sorted({one_line(f) for t in used for f in t.fixtures}))
        these = "test uses" if len(used) == 1 else "tests use"
        lines.append(
            f"pytest-workload: {len(used)} recorded {these} a fixture that called a model in its "
            f"setup ({names}): calls made outside the test's own call are not recorded; call the "
            "model in the test (the fixture can return the model and its inputs) to record and "
            "gate it"
        )
    untimed, not_replayed = count_left_out(tests, "budget"), count_left_out(tests, "xdist")
    if untimed and budget_s is not None:
        these = "workload was" if untimed == 1 else "workloads were"
        lines.append(
            f"pytest-workload: {untimed} {these} not timed: the session's timing budget "
            f"(--workload-session-budget={budget_s:g}) was spent; each has its hashes and FLOPs, "
            'and says so in the JSON report ("measured": {"timing": "not measured", ...})'
        )
    if not_replayed:
        these = "workload was" if not_replayed == 1 else "workloads were"
        lines.append(
            f"pytest-workload: {not_replayed} top-level {these} not replayed for timing: xdist "
            "workers share the cores, which biases timings, so each is timed from its test's own "
            "calls where any were observed, neither judged against a baseline nor written as one, "
            'and says so in the JSON report ("measured": {"timing": ...}); for replayed timings '
            f"run in one process ({commands.run}) or pass --workload-perf=strict"
        )
    return lines


def junit_properties(test: TestWorkloads) -> list[tuple[str, str]]:
    props: list[tuple[str, str]] = []
    for i, w in enumerate(test.workloads):
        prefix = f"workload[{i}] {w.name}"
        props += [(f"{prefix} hash", w.hash), (f"{prefix} input", w.input)]
        if w.timing is not None:
            props.append((f"{prefix} median_s", f"{w.timing.median_s:.6g}"))
            props.append((f"{prefix} ci95_s", f"{w.timing.ci_s[0]:.6g} {w.timing.ci_s[1]:.6g}"))
        if w.flops is not None:
            props.append((f"{prefix} flops", str(w.flops)))
    return props


def render_unchecked(
    kept: int, *, gate: bool, update: bool, recorded: int, commands: Commands
) -> str | None:
    """Under the gate syrupy counts the kept ones as passed (they were used, left as they are);
    without it, none is asserted."""
    snapshots = plural(kept, "workload snapshot")
    counted = f" (syrupy counts {'it' if kept == 1 else 'them'} as passed)"
    if not gate and update and (recorded or kept):
        left = f"; {snapshots} left as {'it is' if kept == 1 else 'they are'}" if kept else ""
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
            f"{snapshots} not checked: workload snapshots are checked only with --workload-snapshot"
        )
    if kept:
        return (
            f"{snapshots} not checked{counted}: {'its test' if kept == 1 else 'their tests'} failed"
        )
    return None


#: How the terminal counts each kind of performance note: what one is, and what is said of
#: it, worded for one or several by :data:`_NUMBER` (with what to do).
_NOTE_COUNTS: dict[NoteKind, tuple[str, str]] = {
    "baseline recorded": ("timing baseline", "recorded"),
    "baseline refreshed": ("timing baseline", "refreshed"),
    "baseline not written: xdist": (
        "timing baseline",
        "not written: timed while xdist workers shared this machine; write {it} with "
        "{baseline} (or pass --workload-perf=strict)",
    ),
    "baseline not written: too few samples": (
        "timing baseline",
        f"not written: timed on fewer than the {MIN_SAMPLES} samples a verdict needs",
    ),
    "baseline not written: cut short": (
        "timing baseline",
        "not written: the time budget cut {its} timing{s} short; write {it} with a larger one: "
        "{larger}",
    ),
    "no baseline": ("workload", "without a timing baseline: record {it} with {baseline}"),
    "no baseline: cut short": (
        "workload",
        "without a timing baseline, {its} timing{s} cut short by the time budget: record {it} "
        "with a larger one: {larger}",
    ),
    "faster": ("workload", "faster than {its} baseline{s}: refresh {it} with {baseline}"),
    "not judged: xdist": (
        "regression",
        "not failed: timed while xdist workers shared this machine; judge {it} with {run} (or "
        "pass --workload-perf=strict)",
    ),
    "not judged: too few samples": (
        "timing",
        "not judged: {they} or {its} baseline{s} {has} fewer than the "
        f"{MIN_SAMPLES} samples a verdict needs",
    ),
    "not judged: kernel": (
        "timing",
        "not judged: the calibration kernel's time moved too far from {its} baseline{s_} to "
        "compare them",
    ),
    "unreadable baseline": ("timing baseline", "unreadable: left out of nearest-shape lookups"),
    "measurement": ("workload", "measured approximately or not at all"),
}
#: The words of a counted line for one (``False``) or several (``True``).
_NUMBER = {
    False: {"it": "it", "its": "its", "s": "", "s_": "'s", "they": "it", "has": "has"},
    True: {"it": "them", "its": "their", "s": "s", "s_": "s'", "they": "they", "has": "have"},
}


def _counted(note: Note) -> str:
    """The workload a note is about where the line counts workloads (its tests' notes may differ
    in text), else the note's text (a baseline file, a timing of one test)."""
    counts_workloads = _NOTE_COUNTS.get(note.kind, ("", ""))[0] == "workload"
    return note.workload if counts_workloads and note.workload is not None else note.text


def render_note_counts(
    notes: Sequence[Note],
    commands: Commands,
    json: bool,
    *,
    quiet: bool = False,
    larger: float | None = None,
) -> list[str]:
    """A workload that five tests run is counted once; a suite has as many notes as workloads
    (``quiet``: one line counts them all). ``larger``: the time budget the timings cut short
    need."""
    counted: dict[NoteKind, set[str]] = {}
    for note in notes:
        counted.setdefault(note.kind, set()).add(_counted(note))
    raised = "" if larger is None else commands.raise_budget(larger)
    lines = []
    for kind, (what, text) in _NOTE_COUNTS.items():
        if kind in counted:
            count = len(counted[kind])
            words = _NUMBER[count > 1]
            text = text.format(baseline=commands.baseline, run=commands.run, larger=raised, **words)
            lines.append(f"{plural(count, what)} {text}")
    if lines and quiet:
        distinct = len({_counted(n) for n in notes})
        return [f"{plural(distinct, 'workload performance note')} (shown without -q)"]
    if lines:
        where = "the JSON report" if json else "--workload-json=PATH"
        lines.append(f'each note, with its test and workload: {where} ("notes")')
    return lines


def render_notes(notes: Sequence[Note]) -> list[str]:
    """Each note once, after the test that first showed it (and how many more did). A note's own
    line breaks are kept, so each user-chosen part of it must already be ``one_line``."""
    seen: dict[str, list[str]] = {}
    for note in notes:
        nodeids = seen.setdefault(note.text, [])
        if note.nodeid not in nodeids:
            nodeids.append(note.nodeid)
    lines = []
    for text, nodeids in seen.items():
        more = len(nodeids) - 1
        where = one_line(nodeids[0]) + (f" (and {plural(more, 'more test')})" if more else "")
        lines.append(terminal_text(f"{where}: {text}"))
    return lines
