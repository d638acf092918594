"""Charts of a comparison: per workload, base against head timing with 95% intervals.

Needs matplotlib (``pip install pytest-workload[chart]``); nothing else imports this module.
"""

from __future__ import annotations

import html
import io
from pathlib import Path
from typing import TYPE_CHECKING

from .._core.errors import WorkloadError
from .._core.text import one_line
from .compare import Comparison, Row

if TYPE_CHECKING:
    from matplotlib.figure import Figure


_FORMATS = (".svg", ".png", ".html")


def _timed(rows: tuple[Row, ...]) -> list[Row]:
    return [r for r in rows if r.head_time is not None or r.base_time is not None]


def _figure(comparison: Comparison) -> Figure:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise WorkloadError(
            "charts need matplotlib: pip install 'pytest-workload[chart]'"
        ) from None
    rows = _timed(comparison.rows)
    fig, ax = plt.subplots(figsize=(9, 0.6 * max(len(rows), 1) + 1.5))
    # one line each, and no mathtext: a "$" in a name would otherwise be rendered as maths
    labels = [one_line(f"{r.name} {r.input}").replace("$", r"\$") for r in rows]
    for offset, side, color in ((-0.2, "base_time", "#8c8c8c"), (0.2, "head_time", "#1f77b4")):
        ys: list[float] = []
        xs: list[float] = []
        errors: tuple[list[float], list[float]] = ([], [])
        for i, row in enumerate(rows):
            t = getattr(row, side)
            if t is None:
                continue
            ys.append(i + offset)
            xs.append(t.median_s * 1e3)
            errors[0].append((t.median_s - t.ci_low_s) * 1e3)
            errors[1].append((t.ci_high_s - t.median_s) * 1e3)
        ax.barh(
            ys,
            xs,
            height=0.38,
            xerr=errors,
            color=color,
            capsize=3,
            label=side.removesuffix("_time"),
        )
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("median time per call (ms), 95% interval")
    ax.set_title("pytest-workload: base vs head")
    ax.legend()
    fig.tight_layout()
    return fig


def write_chart(comparison: Comparison, path: Path) -> Path:
    """Write the chart as SVG or PNG, or as an HTML page that embeds the SVG."""
    if path.suffix not in _FORMATS:
        raise WorkloadError(f"chart {path}: use one of {', '.join(_FORMATS)}")
    if not _timed(comparison.rows):
        raise WorkloadError("no timings to chart: were the reports written with timing on?")
    fig = _figure(comparison)
    try:
        _save(fig, path)
    except OSError as exc:
        raise WorkloadError(f"cannot write chart {path}: {exc.strerror or exc}") from None
    return path


def _save(fig: Figure, path: Path) -> None:
    if path.suffix == ".html":
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg")
        title = html.escape("pytest-workload comparison")
        path.write_text(
            f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
            f"<body>{buffer.getvalue()}</body></html>\n",
            encoding="utf-8",
        )
    else:
        fig.savefig(path)
