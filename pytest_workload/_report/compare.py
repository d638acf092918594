"""Comparing two ``--workload-json`` reports, what CI shows on a pull request, by the snapshot
gate's own verdicts: ``compare_tables`` for hashes, the drift gate's ``judge`` for timings."""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .._core.errors import WorkloadError
from .._core.text import (
    format_duration,
    html_pre,
    markdown_code,
    markdown_text,
    one_line,
    short,
    versions_line,
)
from .._perf import DEFAULT_TOLERANCE, Drift, judge
from .._snapshot import compare_tables, explain, named
from .._workload.timing import Timing
from .._workload.workload import TestWorkloads, Workload
from .collapse import Collapse, KeyChecks, render_collapse
from .session_report import SessionReport, same_device

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Verdict = Literal[
    "ok", "changed", "new", "removed", "slower", "faster", "too few", "not comparable"
]


#: A new workload (a test added with the change) is reported, not a regression.
REGRESSIONS: frozenset[Verdict] = frozenset({"changed", "removed", "slower"})


@dataclass(frozen=True)
class Row:
    nodeid: str
    #: The recorded workload, or the stored one that vanished.
    workload: Workload
    base_hash: str | None
    head_hash: str | None
    verdict: Verdict
    details: tuple[str, ...] = ()
    base_time: Timing | None = None
    head_time: Timing | None = None
    drift: Drift | None = None


@dataclass(frozen=True)
class Comparison:
    rows: tuple[Row, ...]
    collapses: tuple[Collapse, ...] = ()
    timings_compared: bool = False
    #: The two reports' library versions, when hashes changed and the versions differ.
    libraries: str | None = None

    @property
    def regressed(self) -> bool:
        return bool(self.collapses) or any(r.verdict in REGRESSIONS for r in self.rows)


#: A row's verdict from a timing drift's kind.
_VERDICTS: dict[str, Verdict] = {
    "unchanged": "ok",
    "regression": "slower",
    "faster": "faster",
    "too few samples": "too few",
    "not comparable": "not comparable",
}


def _change_row(
    nodeid: str, old: Workload | None, new: Workload | None, tables: tuple[TestWorkloads, ...]
) -> Row:
    return Row(
        nodeid,
        named(old, new),
        None if old is None else old.hash,
        None if new is None else new.hash,
        "new" if old is None else "removed" if new is None else "changed",
        tuple(explain(old, new, *tables)),
    )


def _timed_row(nodeid: str, w: Workload, base: Timing | None, tolerance: float) -> Row:
    drift = None if base is None or w.timing is None else judge(w.timing, base, tolerance)
    return Row(
        nodeid,
        w,
        w.hash,
        w.hash,
        "ok" if drift is None else _VERDICTS[drift.kind],
        base_time=base,
        head_time=w.timing,
        drift=drift,
    )


def compare_reports(
    base: SessionReport, head: SessionReport, tolerance: float = DEFAULT_TOLERANCE
) -> Comparison:
    """Rows for every top-level workload and every changed one."""
    if base.scheme != head.scheme:
        raise WorkloadError(
            f"the reports use fingerprint schemes {base.scheme} and {head.scheme}: hashes are "
            "not comparable; regenerate the base report with the same pytest-workload"
        )
    timed = same_device(base, head)
    base_tests = {t.nodeid: t for t in base.tests}
    head_tests = {t.nodeid: t for t in head.tests}
    rows: list[Row] = []
    absent = TestWorkloads("", ())
    # head's tests in its order, then those only the base had
    for nodeid in [*head_tests, *(k for k in base_tests if k not in head_tests)]:
        b, h = base_tests.get(nodeid, absent), head_tests.get(nodeid, absent)
        tables = (b.folded(), h.folded())
        pairs = compare_tables(*tables)
        rows += [_change_row(nodeid, *pair, tables) for pair in pairs]
        changed = {new.hash for _, new in pairs if new is not None}
        base_times = {w.hash: w.timing for w in b.roots() if timed and w.timing is not None}
        rows += [
            _timed_row(nodeid, w, base_times.get(w.hash), tolerance)
            for w in h.roots()
            if w.hash not in changed
        ]
    checks = KeyChecks()
    collapses = tuple(c for test in head.tests for c in checks.check(test))
    hashes_changed = any(r.base_hash != r.head_hash for r in rows)
    versions = versions_line(base.libraries, head.libraries) if hashes_changed else None
    return Comparison(tuple(rows), collapses, timings_compared=timed, libraries=versions)


def _ratio(row: Row) -> str:
    return "" if row.drift is None else row.drift.figure()


def _times(row: Row) -> str:
    """Wall time, labelled as context where a calibrated ratio decided."""
    if row.head_time is None:
        return ""
    head = format_duration(row.head_time.median_s)
    if row.base_time is None:
        return f"wall {head}"
    context = row.drift is not None and row.drift.evidence == "calibrated"
    label = "wall time, context only" if context else "wall"
    return f"{label} {format_duration(row.base_time.median_s)} -> {head}"


def _hashes(row: Row) -> str:
    base, head = row.base_hash, row.head_hash
    if base is None or head is None:
        return short(base or head or "")
    return short(base) if base == head else f"{short(base)} -> {short(head)}"


def _summary(c: Comparison) -> str:
    counts = Counter(r.verdict for r in c.rows)
    parts = [f"{len(c.rows)} workloads"] + [
        f"{counts[v]} {v}" for v in ("changed", "new", "removed", "slower", "faster") if counts[v]
    ]
    if counts["too few"]:
        parts.append(f"{counts['too few']} timed on too few samples (not judged)")
    if counts["not comparable"]:
        n = counts["not comparable"]
        parts.append(f"{n} whose calibration kernel times are too far apart (not judged)")
    if c.collapses:
        parts.append(f"{len(c.collapses)} collapses or unstable keys")
    if not c.timings_compared:
        parts.append("timings not compared (different or unknown devices)")
    verdict = "REGRESSED" if c.regressed else "no regressions"
    return f"{', '.join(parts)}: {verdict}"


def render_comparison(c: Comparison) -> list[str]:
    lines: list[str] = []
    for nodeid in dict.fromkeys(r.nodeid for r in c.rows):
        lines.append(one_line(nodeid))
        for r in (r for r in c.rows if r.nodeid == nodeid):
            name = one_line(f"{r.workload.label} {r.workload.input}")
            cells = [f"{r.verdict:<8}", name, _hashes(r), _ratio(r), _times(r)]
            lines.append("  " + "  ".join(cell for cell in cells if cell))
            lines += [f"             {one_line(d)}" for d in r.details]
    problems = [render_collapse(x) for x in c.collapses]
    lines += [one_line(line) for p in problems for line in p.splitlines()]
    lines += [one_line(c.libraries)] if c.libraries else []
    lines.append(_summary(c))
    return lines


def render_comparison_markdown(c: Comparison) -> list[str]:
    title = "regressed" if c.regressed else "no regressions"
    lines = [
        f"### pytest-workload: {title}",
        "",
        _summary(c),
        "",
        *([markdown_text(c.libraries), ""] if c.libraries else []),
        "| verdict | test | workload | input | hash | deciding ratio [95% interval] | wall time "
        "(base -> head) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in c.rows:
        verdict = f"**{r.verdict}**" if r.verdict in REGRESSIONS else r.verdict
        cells = [
            verdict,
            markdown_code(r.nodeid),
            markdown_text(r.workload.label),
            markdown_code(r.workload.input),
            markdown_code(_hashes(r)),
            markdown_text(_ratio(r)),
            markdown_text(_times(r)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    detailed = [r for r in c.rows if r.details]
    problems = [render_collapse(x) for x in c.collapses]
    if detailed or problems:
        lines += ["", "<details><summary>What changed</summary>", ""]
        for r in detailed:
            lines.append(
                f"- {markdown_code(r.nodeid)} {markdown_text(r.workload.label)} "
                f"{markdown_code(r.workload.input)} ({r.verdict})"
            )
            lines += [f"  - {markdown_text(d)}" for d in r.details]
        lines += ["", *(html_pre(p) for p in problems), "", "</details>"]
    return lines


_FORMATS = (".svg", ".png", ".html")


def _label(row: Row) -> str:
    verdict = row.verdict + (f", {_ratio(row)}" if row.drift is not None else "")
    return f"{row.nodeid} {row.workload.label} {row.workload.input}: {verdict}"


def _figure(rows: list[Row]) -> Figure:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise WorkloadError(
            "charts need matplotlib: pip install 'pytest-workload[chart]'"
        ) from None
    fig, ax = plt.subplots(figsize=(9, 0.6 * max(len(rows), 1) + 1.5))
    # one line each, and no mathtext: a "$" in a name would otherwise be rendered as maths; the
    # test id on each (two tests may run one workload), then the verdict and what decided it
    labels = [one_line(_label(r)).replace("$", r"\$") for r in rows]
    for offset, side, color in ((-0.2, "base_time", "#8c8c8c"), (0.2, "head_time", "#1f77b4")):
        timed = [(i + offset, t) for i, r in enumerate(rows) if (t := getattr(r, side)) is not None]
        ax.barh(
            [y for y, _ in timed],
            [t.median_s * 1e3 for _, t in timed],
            height=0.38,
            xerr=(
                [(t.median_s - t.ci_s[0]) * 1e3 for _, t in timed],
                [(t.ci_s[1] - t.median_s) * 1e3 for _, t in timed],
            ),
            color=color,
            capsize=3,
            label=side.removesuffix("_time"),
        )
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(
        "wall time per call (ms, median and 95% interval): context; the label's ratio decides"
    )
    ax.set_title("pytest-workload: base vs head")
    ax.legend()
    fig.tight_layout()
    return fig


def write_chart(comparison: Comparison, path: Path) -> None:
    if path.suffix not in _FORMATS:
        raise WorkloadError(f"chart {path}: use one of {', '.join(_FORMATS)}")
    rows = [r for r in comparison.rows if r.head_time is not None or r.base_time is not None]
    if not rows:
        raise WorkloadError("no timings to chart: were the reports written with timing on?")
    fig = _figure(rows)
    try:
        if path.suffix == ".html":
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg")
            path.write_text(
                "<!doctype html><html><head><meta charset='utf-8'><title>pytest-workload "
                f"comparison</title></head><body>{buffer.getvalue()}</body></html>\n",
                encoding="utf-8",
            )
        else:
            fig.savefig(path)
    except OSError as exc:
        raise WorkloadError(f"cannot write chart {path}: {exc.strerror or exc}") from None
