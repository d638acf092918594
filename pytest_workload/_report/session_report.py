"""The JSON report, its file, and the merge of CI shards' reports into one, which checks
collapses across them (docs/how-to/ci.md)."""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .._core.codec import Record, check_version, codec
from .._core.errors import FutureFormatError, WorkloadDataError, WorkloadError
from .._core.files import (
    FINGERPRINT_SCHEME,
    REPORT_SCHEMA_VERSION,
    read_json_file,
    write_text_atomic,
)
from .._core.notes import Note
from .._core.strict_json import Json, load_json, read_count, read_field
from .._core.text import one_line
from .._workload.modules import modules_to_dict, read_modules
from .._workload.timing import LeftOut
from .._workload.workload import TestWorkloads
from .collapse import Collapse, KeyChecks, render_collapse


def count_left_out(tests: Sequence[TestWorkloads], why: LeftOut) -> int:
    """Workloads whose timing was left out for ``why``: the session's timing budget, or
    xdist workers sharing the cores."""
    return sum(1 for t in tests for w in t if w.measured and w.measured.timing.left_out == why)


def _write_versions(scheme: int) -> dict[str, Json]:
    return {"schema_version": REPORT_SCHEMA_VERSION, "fingerprint_scheme": scheme}


def _read_versions(d: Mapping[str, Any]) -> int:
    upgrade = ": upgrade pytest-workload to read it"
    what = "report schema_version"
    check_version(d, "schema_version", what, REPORT_SCHEMA_VERSION, "reads", upgrade)
    scheme = read_count(d, "fingerprint_scheme", 1)
    if scheme > FINGERPRINT_SCHEME:
        raise FutureFormatError(
            f"fingerprint scheme {scheme} (this release computes scheme {FINGERPRINT_SCHEME}): "
            "upgrade pytest-workload to read it"
        )
    return scheme


def _write_tests(tests: tuple[TestWorkloads, ...]) -> dict[str, Json]:
    """The counts (each of them says so in its measured.timing too), the tests, and one module
    table for all of them."""
    counts = {
        "not_timed": count_left_out(tests, "budget"),
        "not_replayed": count_left_out(tests, "xdist"),
    }
    data: dict[str, Json] = {k: n for k, n in counts.items() if n}
    data["tests"] = [t.to_dict(modules=False) for t in tests]
    data["modules"] = modules_to_dict({k: v for t in tests for k, v in t.modules.items()})
    return data


def _read_tests(d: Mapping[str, Any]) -> tuple[TestWorkloads, ...]:
    modules = read_modules(d.get("modules", {}))
    tests = tuple(TestWorkloads.from_dict(t, modules) for t in read_field(d, "tests", list))
    seen: set[str] = set()
    for test in tests:
        if test.nodeid in seen:
            raise WorkloadDataError(f"test {test.nodeid!r} is listed twice")
        seen.add(test.nodeid)
    return tests


@dataclass(frozen=True)
class SessionReport(Record):
    """A session's JSON report, as ``--workload-json`` writes it and ``read_report`` reads it.

    Attributes:
        scheme: The fingerprint scheme every hash in it was computed under.
        environment: Where the timings were measured (device, torch, threads, CPU, Python,
            platform), as JSON; None when the session imported no torch.
        problems: What the session could not record, one line each (for example the tests of
            a crashed xdist worker).
        notes: What the session noted that failed nothing, with the test each came from (the
            terminal counts them by kind).
        tests: Every test that recorded workloads, in the order the session ran them.
    """

    scheme: int = field(metadata=codec(flatten=True, write=_write_versions, read=_read_versions))
    environment: Json = None
    problems: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()
    tests: tuple[TestWorkloads, ...] = field(
        default=(), metadata=codec(flatten=True, write=_write_tests, read=_read_tests)
    )

    what: ClassVar[str] = "report"

    @property
    def libraries(self) -> dict[str, str]:
        """The library versions its tests recorded."""
        return {k: v for t in self.tests for k, v in t.libraries.items()}


def _report_text(data: dict[str, Json]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_report(
    path: Path, report: SessionReport, extend: Callable[[dict[str, Json]], None] | None = None
) -> str | None:
    """``extend`` (the ``pytest_workload_update_json`` hook) may add fields first. Where it
    raises, or leaves a report the readers refuse, the report is written without its changes,
    and the returned line says why."""
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
            refused = (
                f"pytest_workload_update_json failed ({exc!r}); the JSON report is written "
                "without its changes"
            )
    write_text_atomic(path, text)
    return refused


def read_report(path: Path) -> SessionReport:
    """Read a report that ``pytest --workload-json=PATH`` wrote (the package's example reads
    one).

    Only the current report schema is read. ``pytest-workload compare`` and ``merge`` read
    reports through this function too.

    Args:
        path: The report file.

    Returns:
        The report, every test's workloads in the order the session recorded them.

    Raises:
        CorruptFileError: The file cannot be read or is not a report. Its ``old`` is set for
            an older schema (the message names the command that regenerates it), its
            ``future`` for a newer schema than this release reads.
    """
    command = shlex.join(["pytest", f"--workload-json={path}"])
    return read_json_file(path, SessionReport.from_dict, "workload report", command)


def same_device(base: SessionReport, head: SessionReport) -> bool:
    """Whether their timings compare."""
    keys = ("device", "torch", "threads")
    if not isinstance(base.environment, dict) or not isinstance(head.environment, dict):
        return False
    return all(base.environment.get(k) == head.environment.get(k) for k in keys)


@dataclass(frozen=True)
class Shard:
    name: str
    report: SessionReport


@dataclass(frozen=True)
class Merged:
    """The collapses found among its tests, with the shard of each."""

    report: SessionReport
    collapses: tuple[tuple[Collapse, str, str], ...]


def merge_reports(shards: Sequence[Shard]) -> Merged:
    """Tests in shard order."""
    schemes = {s.report.scheme for s in shards}
    if len(schemes) > 1:
        listed = ", ".join(f"{s.name}: scheme {s.report.scheme}" for s in shards)
        raise WorkloadError(
            f"the shards use different fingerprint schemes ({listed}): their hashes are not "
            "comparable; run every shard with the same pytest-workload"
        )
    shard_of: dict[str, str] = {}
    for shard in shards:
        for test in shard.report.tests:
            other = shard_of.get(test.nodeid)
            if other is not None:
                where = (
                    f"twice in {other}" if other == shard.name else f"in {other} and {shard.name}"
                )
                raise WorkloadError(f"test {test.nodeid} is {where}: shards must not overlap")
            shard_of[test.nodeid] = shard.name
    tests = tuple(t for s in shards for t in s.report.tests)
    checks = KeyChecks()
    collapses = tuple(
        (c, shard_of[c.first.nodeid], shard_of[c.second.nodeid])
        for test in tests
        for c in checks.check(test)
    )
    first = shards[0].report
    environment = first.environment
    problems = [f"{s.name}: {p}" for s in shards for p in s.report.problems]
    if not all(same_device(first, s.report) for s in shards[1:]):
        environment = None  # timings not compared
        problems.append(
            f"the shards ({', '.join(s.name for s in shards)}) were measured on different "
            "devices, torch versions or thread counts: the merged report carries no "
            "environment, so compare judges no timing"
        )
    report = SessionReport(
        scheme=first.scheme,
        tests=tests,
        environment=environment,
        problems=tuple(problems),
        notes=tuple(n for s in shards for n in s.report.notes),
    )
    return Merged(report, collapses)


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
