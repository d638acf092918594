"""The ``--workload-json`` report's file: written through the core's atomic writer, read back
through its strict JSON reader."""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Callable
from pathlib import Path

from .._core.errors import CorruptFileError
from .._core.files import read_json_file, write_text_atomic
from .._core.strict_json import Json, load_json
from .session_report import SessionReport


def _report_text(data: dict[str, Json]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_report(
    path: Path, report: SessionReport, extend: Callable[[dict[str, Json]], None] | None = None
) -> str | None:
    """Write a report as JSON; ``extend`` may add fields to the dict first. Where it raises,
    or leaves a report the readers refuse, the report is written without its changes, and
    the returned line says why."""
    data = report.to_dict()
    text, refused = _report_text(data), None
    if extend is not None:
        extended = copy.deepcopy(data)
        try:
            extend(extended)
            extended_text = _report_text(extended)
            SessionReport.from_dict(load_json(extended_text))
            text = extended_text
        except (Exception, SystemExit) as exc:
            refused = repr(exc)
    write_text_atomic(path, text)
    return refused


def read_report(path: Path) -> SessionReport:
    """Read a report that ``pytest --workload-json=PATH`` wrote.

    Example:
        ```python
        report = read_report(Path("workloads.json"))
        slow = [(t.nodeid, w.name) for t in report.tests for w in t
                if w.timing and w.timing.median_s > 0.1]
        ```

    Only the current report schema is read. ``pytest-workload compare`` and ``merge`` read
    reports through this function too.

    Args:
        path: The report file.

    Returns:
        The report, every test's workloads in the order the session recorded them.

    Raises:
        CorruptFileError: The file cannot be read or is not a report. Its ``old`` is set for
            a schema only a development version wrote (the message names the command that
            regenerates it), its ``future`` for a newer schema than this release reads.
    """
    try:
        return read_json_file(path, SessionReport.from_dict, "workload report")
    except CorruptFileError as exc:
        if not exc.old:
            raise
        command = shlex.join(["pytest", f"--workload-json={path}"])
        reason = f"{exc.reason}; regenerate it with `{command}`"
        raise CorruptFileError(exc.path, reason, old=True) from None
