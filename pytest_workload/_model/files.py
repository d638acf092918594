"""Files: the workload snapshot document, the JSON report, atomic writes.

Everything pytest-workload stores is text (JSON), written atomically (a temporary file in the
same directory, then ``os.replace``), so an interrupted run leaves each file old or new, never
half-written. Nothing is ever unpickled.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .canonical import Json
from .errors import CorruptFileError, WorkloadDataError
from .workload import SessionReport

T = TypeVar("T")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` holds either its old content or all of the new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_report(
    path: Path, report: SessionReport, extend: Callable[[dict[str, Json]], None] | None = None
) -> None:
    """Write a report as JSON; ``extend`` may add fields to the dict first."""
    data = report.to_dict()
    if extend is not None:
        extend(data)
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def read_json_file(path: Path, parse: Callable[[object], T], what: str) -> T:
    """Load and parse a JSON file; any problem is a CorruptFileError naming the file."""
    try:
        return parse(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptFileError(str(path), f"cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise CorruptFileError(str(path), f"is not valid JSON ({exc})") from None
    except WorkloadDataError as exc:
        raise CorruptFileError(str(path), f"is not a {what}: {exc}") from None


def read_report(path: Path) -> SessionReport:
    """Load a ``--workload-json`` report; a bad file is a CorruptFileError naming it."""
    return read_json_file(path, SessionReport.from_dict, "workload report")
