"""The command line, ``pytest-workload`` or ``python -m pytest_workload``. Exit status: 1 when
``compare``'s head regressed or ``merge`` found a collapse (the merged report is written all
the same), 2 on bad input or an output that cannot be written, 130 when interrupted."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from ._core.errors import WorkloadError
from ._core.files import write_text_atomic
from ._core.text import one_line
from ._options import number
from ._perf.baseline import DEFAULT_TOLERANCE
from ._report.compare import (
    compare_reports,
    render_comparison,
    render_comparison_markdown,
    write_chart,
)
from ._report.session_report import Shard, merge_reports, read_report, render_merge, write_report


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Compare and merge the JSON reports that `pytest --workload-json=PATH` "
        "writes: the CI verdict between a base and a head, and the merge of CI shards.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    compare = commands.add_parser(
        "compare", help="compare two --workload-json reports (exit 1 when the head regressed)"
    )
    compare.add_argument("base", type=Path, help="the report of the base (e.g. main)")
    compare.add_argument("head", type=Path, help="the report of the change")
    compare.add_argument(
        "--format",
        choices=("text", "markdown"),
        default="text",
        help="markdown suits $GITHUB_STEP_SUMMARY and PR comments (default: text)",
    )
    compare.add_argument(
        "--tolerance",
        type=number,
        default=DEFAULT_TOLERANCE,
        help=f"slowdown allowed beyond the noise, >= 0 (default: {DEFAULT_TOLERANCE})",
    )
    compare.add_argument(
        "--chart", type=Path, metavar="PATH", help="also write a chart (.svg, .png or .html)"
    )
    compare.add_argument("--output", type=Path, metavar="PATH", help="write there, not stdout")
    merge = commands.add_parser(
        "merge",
        help="merge the --workload-json reports of CI shards into one and check collapses "
        "across them (exit 1 on a collapse)",
    )
    merge.add_argument("reports", type=Path, nargs="+", help="the shards' reports")
    merge.add_argument(
        "--output", type=Path, metavar="PATH", required=True, help="where the merged report goes"
    )
    return parser


def _compare(args: argparse.Namespace) -> int:
    """The summary before the chart, so that a chart that fails still leaves the summary."""
    comparison = compare_reports(read_report(args.base), read_report(args.head), args.tolerance)
    render = render_comparison_markdown if args.format == "markdown" else render_comparison
    text = "\n".join(render(comparison)) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(args.output, text, make_parents=False)
    if args.chart is not None:
        write_chart(comparison, args.chart)
    return 1 if comparison.regressed else 0


def _merge(args: argparse.Namespace) -> int:
    shards = [Shard(str(path), read_report(path)) for path in args.reports]
    merged = merge_reports(shards)
    write_report(args.output, merged.report)
    sys.stdout.write("\n".join(render_merge(merged, len(shards), str(args.output))) + "\n")
    return 1 if merged.collapses else 0


def main(argv: Sequence[str] | None = None, prog: str = "pytest-workload") -> int:
    """``prog``: the name the usage line gives (``python -m pytest_workload``)."""
    args = _parser(prog).parse_args(argv)
    try:
        return _merge(args) if args.command == "merge" else _compare(args)
    except WorkloadError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # an output is written atomically: it is old or new, never half
        print(f"{prog} {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(prog="python -m pytest_workload"))
