"""``merge`` output: what the merged report holds and every collapse across shards."""

from __future__ import annotations

from .._core.text import one_line
from .collapse_text import render_collapse
from .merge import Merged


def render_merge(merged: Merged, shards: int, output: str) -> list[str]:
    tests = merged.report.tests
    workloads = [w for t in tests for w in t]
    lines = [
        f"merged {shards} report{'s' if shards != 1 else ''} into {one_line(output)}: "
        f"{len(tests)} tests, "
        f"{len(workloads)} workloads ({len({w.hash for w in workloads})} distinct)"
    ]
    for collapse, first, second in merged.collapses:
        first, second = one_line(first), one_line(second)
        where = f"both in {first}" if first == second else f"across shards {first} and {second}"
        lines += ["", render_collapse(collapse), f"  ({where})"]
    lines += ["", *map(one_line, merged.report.problems)] if merged.report.problems else []
    if not merged.collapses:
        lines.append("no collapse across shards")
    return lines
