"""``compare`` output: the text and Markdown renderings of a report comparison."""

from __future__ import annotations

from collections import Counter

from .._core.text import (
    SHORT_HASH_LENGTH,
    format_duration,
    html_pre,
    markdown_code,
    markdown_text,
    one_line,
    short,
)
from .collapse_text import render_collapse
from .compare import REGRESSIONS, Comparison, Row


def _ratio(row: Row) -> str:
    if row.drift is None:
        return ""
    d = row.drift
    sides = (row.base_time, row.head_time)
    if not all(t is not None and t.has_interval for t in sides):
        return f"{d.ratio:.2f}x"  # too few samples for an interval
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
        return short(base or head or "", n)
    return base[:n] if base == head else f"{base[:n]} -> {head[:n]}"


def _summary(c: Comparison) -> str:
    counts = Counter(r.verdict for r in c.rows)
    parts = [f"{len(c.rows)} workloads"] + [
        f"{counts[v]} {v}" for v in ("changed", "new", "removed", "slower", "faster") if counts[v]
    ]
    if counts["too few"]:
        parts.append(f"{counts['too few']} timed on too few samples (not judged)")
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
        lines.append(one_line(nodeid))
        for r in (r for r in c.rows if r.nodeid == nodeid):
            name = one_line(f"{r.name} {r.input}")
            cells = [f"{r.verdict:<8}", name, _hashes(r), _times(r), _ratio(r)]
            lines.append("  " + "  ".join(cell for cell in cells if cell))
            lines += [f"             {one_line(d)}" for d in r.details]
    lines += [one_line(line) for p in _problems(c) for line in p.splitlines()]
    lines += [one_line(c.libraries)] if c.libraries else []
    lines.append(_summary(c))
    return lines


def _problems(c: Comparison) -> list[str]:
    return [render_collapse(x) for x in c.collapses]


def render_comparison_markdown(c: Comparison) -> list[str]:
    """``compare --format markdown``: for ``$GITHUB_STEP_SUMMARY`` or a PR comment."""
    title = "regressed" if c.regressed else "no regressions"
    lines = [
        f"### pytest-workload: {title}",
        "",
        _summary(c),
        "",
        *([markdown_text(c.libraries), ""] if c.libraries else []),
        "| verdict | test | workload | input | hash | time (base -> head) | ratio [95% interval] |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in c.rows:
        verdict = f"**{r.verdict}**" if r.verdict in REGRESSIONS else r.verdict
        cells = [
            verdict,
            markdown_code(r.nodeid),
            markdown_text(r.name),
            markdown_code(r.input),
            markdown_code(_hashes(r)),
            markdown_text(_times(r)),
            markdown_text(_ratio(r)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    detailed = [r for r in c.rows if r.details]
    problems = _problems(c)
    if detailed or problems:
        lines += ["", "<details><summary>What changed</summary>", ""]
        for r in detailed:
            lines.append(
                f"- {markdown_code(r.nodeid)} {markdown_text(r.name)} {markdown_code(r.input)} "
                f"({r.verdict})"
            )
            lines += [f"  - {markdown_text(d)}" for d in r.details]
        lines += ["", *(html_pre(p) for p in problems), "", "</details>"]
    return lines
