"""Rendering: the terminal report and the text of every failure message. Pure functions."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence

from .baseline import Baseline
from .collapse import Collapse
from .compare import REGRESSIONS, Comparison, Row
from .data import TestWorkloads, Workload
from .diff import Change, format_key
from .drift import Drift
from .fingerprint import SHORT_HASH_LENGTH
from .timing import Timing

_INDENT = "    "


def prefix_length(hashes: Iterable[str], minimum: int = SHORT_HASH_LENGTH) -> int:
    """Shortest displayed prefix (at least ``minimum``) that tells all distinct hashes apart."""
    distinct = sorted(set(hashes))
    length = minimum
    for a, b in itertools.pairwise(distinct):
        common = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        length = max(length, common + 1)
    return length


def format_duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


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
    return (
        f"median {format_duration(t.median_s)}, IQR {format_duration(t.iqr_s)}, 95% CI "
        f"{format_duration(t.ci_low_s)}–{format_duration(t.ci_high_s)} (n={t.n}, {where}, "
        f"{t.device})"
    )


def _workload_lines(w: Workload, indent: str, hash_len: int) -> list[str]:
    executed = f"executed {w.calls}×"
    if w.total_time_s is not None:
        executed += f" – {format_duration(w.total_time_s)}"
    fields = [
        ("Class", f"{_short_class(w.class_name)} ({w.class_name})"),
        ("Location", w.location),
        ("Parameters", format_params(w.params.count, w.params.bytes)),
        ("Input", w.input_signature.format()),
        ("Hash", w.hash[:hash_len]),
        ("Timing", None if w.timing is None else format_timing(w.timing)),
        ("FLOPs", None if w.flops is None else format_flops(w.flops)),
        (
            "Peak memory",
            None if w.peak_memory_bytes is None else f"{w.peak_memory_bytes / 1e6:.1f} MB",
        ),
    ]
    lines = [f"{indent}{w.name} ({executed})"]
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
        lines.append(test.nodeid)
        for root in test.roots():
            lines += _tree_lines(test, root, _INDENT, hash_len)
            lines.append("")
        lines.pop()
    return lines


def _describe(w: Workload) -> str:
    return f"{w.name} ({w.class_name}), input {w.input_signature.format()}"


def render_collapse(collapse: Collapse) -> str:
    """The failure text of a hash collapse, a user key collapse or an unstable user key."""
    a, b = collapse.first, collapse.second
    if collapse.kind == "unstable user key":
        assert a.user_key is not None and b.user_key is not None
        return "\n".join(
            [
                "unstable user key: one workload got different keys from pytest_workload_key:",
                f"  workload: {_describe(a.workload)}, hash {a.workload.hash[:SHORT_HASH_LENGTH]}",
                f"  - {a.nodeid}, call {a.user_key.first_call}: {format_key(a.user_key.key)}",
                f"  - {b.nodeid}, call {b.user_key.first_call}: {format_key(b.user_key.key)}",
            ]
        )
    if collapse.kind == "user key collapse":
        assert a.user_key is not None
        head = (
            f"user key collapse: two distinct workloads share the key {format_key(a.user_key.key)}"
        )
        n = prefix_length([a.workload.hash, b.workload.hash])
        rows = [
            f"  - {s.nodeid}: {_describe(s.workload)}, hash {s.workload.hash[:n]}" for s in (a, b)
        ]
    else:
        head = f"workload hash collapse: two distinct workloads share the hash {a.workload.hash}"
        n = prefix_length([a.workload.structure_hash, b.workload.structure_hash])
        rows = [
            f"  - {s.nodeid}: {_describe(s.workload)}, structure {s.workload.structure_hash[:n]}"
            for s in (a, b)
        ]
    return "\n".join([head, *rows])


def _entry_title(change: Change) -> str:
    e = change.entry
    return f"{e.name} ({e.class_name})"


#: Submodule changes listed per message before the rest are summarised in a count.
MAX_SUBMODULE_CHANGES = 8


def _change_lines(change: Change, hash_len: int) -> list[str]:
    if change.kind == "changed":
        assert change.old is not None and change.new is not None
        head = (
            f"changed:  {_entry_title(change)} {change.old.hash[:hash_len]} -> "
            f"{change.new.hash[:hash_len]}"
        )
        return [head, *(f"{_INDENT}{d}" for d in change.details)]
    e = change.entry
    return [
        f"{change.kind + ':':<9} {_entry_title(change)} {e.hash[:hash_len]}, input "
        f"{e.input_signature.format()}",
        *(f"{_INDENT}{d}" for d in change.details),
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


UPDATE_HINT = "run `pytest --workload-snapshot --snapshot-update` to accept the recorded workloads"


def _workload_title(w: Workload) -> str:
    return f"{w.name} ({w.class_name}), input {w.input_signature.format()}, hash {w.hash[:8]}"


def render_regression(w: Workload, baseline: Timing, drift: Drift, device: str) -> str:
    current = w.timing
    assert current is not None
    return "\n".join(
        [
            f"performance regression: {_workload_title(w)}",
            f"  median {format_duration(current.median_s)} vs baseline "
            f"{format_duration(baseline.median_s)}: {drift.ratio:.2f}x slower (95% interval "
            f"of the ratio {drift.ratio_low:.2f}–{drift.ratio_high:.2f}x; tolerance "
            f"{drift.tolerance:.0%})",
            f"  current 95% CI {format_duration(current.ci_low_s)}–"
            f"{format_duration(current.ci_high_s)} (n={current.n}), baseline 95% CI "
            f"{format_duration(baseline.ci_low_s)}–{format_duration(baseline.ci_high_s)} "
            f"(n={baseline.n})",
            f"  on {device}; accept the new timing with --snapshot-update",
        ]
    )


def render_faster(w: Workload, baseline: Timing, drift: Drift) -> str:
    assert w.timing is not None
    return (
        f"{_workload_title(w)} is {1 / drift.ratio:.2f}x faster than its baseline "
        f"({format_duration(w.timing.median_s)} vs {format_duration(baseline.median_s)}); "
        "refresh the baseline with --snapshot-update"
    )


def _share(load: float | None) -> str:
    return "unknown" if load is None else f"{load:.0%}"


def render_contended(w: Workload, baseline: Timing, drift: Drift) -> str:
    assert w.timing is not None
    return (
        f"{_workload_title(w)}: {drift.ratio:.2f}x its baseline, not judged: other processes "
        f"used {_share(w.timing.others_load)} of the machine's CPU while it was timed "
        f"(baseline: {_share(baseline.others_load)}); rerun on a quieter machine"
    )


def render_missing_baseline(
    w: Workload, device: str, nearest: tuple[Baseline, float] | None
) -> str:
    line = f"no timing baseline for {_workload_title(w)} on {device}"
    if nearest is None:
        return line + "; record one with --snapshot-update"
    other, factor = nearest
    assert w.timing is not None
    expected = other.timing.median_s * factor
    return (
        f"{line}; nearest compatible baseline: {other.name} {other.input} "
        f"({format_duration(other.timing.median_s)}) at distance factor {factor:g}, so about "
        f"{format_duration(expected)} expected if time scales with size (measured "
        f"{format_duration(w.timing.median_s)})"
    )


def _ratio(row: Row) -> str:
    if row.drift is None:
        return ""
    d = row.drift
    return f"{d.ratio:.2f}x [{d.ratio_low:.2f}–{d.ratio_high:.2f}]"


def _times(row: Row) -> str:
    if row.head_time is None:
        return ""
    head = format_duration(row.head_time.median_s)
    if row.base_time is None:
        return head
    return f"{format_duration(row.base_time.median_s)} -> {head}"


def _hashes(row: Row, n: int = SHORT_HASH_LENGTH) -> str:
    base, head = row.base_hash, row.head_hash
    if base is None or head is None:
        return (base or head or "")[:n]
    return base[:n] if base == head else f"{base[:n]} -> {head[:n]}"


def _summary(c: Comparison) -> str:
    counts = Counter(r.verdict for r in c.rows)
    parts = [f"{len(c.rows)} workloads"] + [
        f"{counts[v]} {v}" for v in ("changed", "new", "removed", "slower", "faster") if counts[v]
    ]
    if counts["contended"]:
        parts.append(f"{counts['contended']} contended (not judged)")
    if c.collapses:
        parts.append(f"{len(c.collapses)} collapses or unstable keys")
    if not c.timings_compared:
        parts.append("timings not compared (different or unknown devices)")
    verdict = "REGRESSED" if c.regressed else "no regressions"
    return f"{', '.join(parts)}: {verdict}"


def render_comparison(c: Comparison) -> list[str]:
    """``compare``'s text output: per test, one line per workload, details indented."""
    lines: list[str] = []
    for nodeid in dict.fromkeys(r.nodeid for r in c.rows):
        lines.append(nodeid)
        for r in (r for r in c.rows if r.nodeid == nodeid):
            cells = [f"{r.verdict:<8}", f"{r.name} {r.input}", _hashes(r), _times(r), _ratio(r)]
            lines.append("  " + "  ".join(cell for cell in cells if cell))
            lines += [f"             {d}" for d in r.details]
    lines += _problems(c)
    lines.append(_summary(c))
    return lines


def _problems(c: Comparison) -> list[str]:
    return [render_collapse(x) for x in c.collapses] + ([c.incomparable] if c.incomparable else [])


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_comparison_markdown(c: Comparison) -> list[str]:
    """``compare --format markdown``: for ``$GITHUB_STEP_SUMMARY`` or a PR comment."""
    title = "regressed" if c.regressed else "no regressions"
    lines = [
        f"### pytest-workload: {title}",
        "",
        _summary(c),
        "",
        "| verdict | test | workload | input | hash | time (base -> head) | ratio [95% interval] |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in c.rows:
        verdict = f"**{r.verdict}**" if r.verdict in REGRESSIONS else r.verdict
        cells = [
            verdict,
            f"`{r.nodeid}`",
            r.name,
            f"`{r.input}`",
            f"`{_hashes(r)}`",
            _times(r),
            _ratio(r),
        ]
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    detailed = [r for r in c.rows if r.details]
    problems = _problems(c)
    if detailed or problems:
        lines += ["", "<details><summary>What changed</summary>", ""]
        for r in detailed:
            lines.append(f"- `{r.nodeid}` {r.name} `{r.input}` ({r.verdict})")
            lines += [f"  - {_cell(d)}" for d in r.details]
        lines += ["", *(f"```\n{p}\n```" for p in problems), "</details>"]
    return lines


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
