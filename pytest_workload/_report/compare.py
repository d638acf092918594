"""Comparing two ``--workload-json`` reports: what CI shows on a pull request.

Hash changes are decided by :func:`.diff.compare_documents` and timings by
:func:`.drift.judge`, the same verdicts the snapshot gate uses. Timings are only
compared when both reports were measured on the same device identity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .._core.errors import WorkloadError
from .._core.text import versions_line
from .._perf import DEFAULT_TOLERANCE, Drift, judge
from .._snapshot import Change, SnapshotDocument, compare_documents
from .._workload.timing import Timing
from .._workload.workload import TestWorkloads, Workload
from .collapse import Collapse, KeyChecks
from .session_report import SessionReport

Verdict = Literal["ok", "changed", "new", "removed", "slower", "faster", "too few"]


#: Verdicts that make ``compare`` exit non-zero. A new workload (a test added with the change)
#: is reported, not a regression.
REGRESSIONS: frozenset[Verdict] = frozenset({"changed", "removed", "slower"})


@dataclass(frozen=True)
class Row:
    """One workload of one test, in the base report, the head report, or both; ``name`` is
    its path, or its path patterns where several paths ran it."""

    nodeid: str
    name: str
    class_name: str
    depth: int
    input: str
    base_hash: str | None
    head_hash: str | None
    verdict: Verdict
    details: tuple[str, ...] = ()
    base_time: Timing | None = None
    head_time: Timing | None = None
    drift: Drift | None = None


class IncomparableError(WorkloadError):
    """Reports of two fingerprint schemes: no verdict, since no hash of one means anything in
    the other."""


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


def _document(test: TestWorkloads | None, scheme: int) -> SnapshotDocument:
    if test is None:
        return SnapshotDocument.of(scheme, ())
    return SnapshotDocument.of(scheme, test.workloads, test.modules, test.libraries)


def _root_timings(test: TestWorkloads | None) -> dict[str, Timing]:
    if test is None:
        return {}
    return {w.hash: w.timing for w in test.roots() if w.timing is not None}


_DRIFT_VERDICTS: dict[str, Verdict] = {
    "regression": "slower",
    "faster": "faster",
    "too few samples": "too few",
}


_CHANGE_VERDICTS: dict[str, Verdict] = {
    "changed": "changed",
    "appeared": "new",
    "vanished": "removed",
}


def _change_row(nodeid: str, change: Change) -> Row:
    e = change.entry
    verdict = _CHANGE_VERDICTS[change.kind]
    return Row(
        nodeid,
        e.label,
        e.class_name,
        e.depth,
        e.input_signature.format(),
        None if change.old is None else change.old.hash,
        None if change.new is None else change.new.hash,
        verdict,
        change.details,
    )


def _timed_row(nodeid: str, w: Workload, base: Timing | None, tolerance: float) -> Row:
    drift = None if base is None or w.timing is None else judge(w.timing, base, tolerance)
    verdict: Verdict = "ok"
    if drift is not None and drift.kind != "unchanged":
        verdict = _DRIFT_VERDICTS[drift.kind]
    return Row(
        nodeid,
        w.label,
        w.class_name,
        w.depth,
        w.input_signature.format(),
        w.hash,
        w.hash,
        verdict,
        base_time=base,
        head_time=w.timing,
        drift=drift,
    )


def same_device(base: SessionReport, head: SessionReport) -> bool:
    """Whether two reports were measured on one device identity, so their timings compare."""
    keys = ("device", "torch", "threads")
    if not isinstance(base.environment, dict) or not isinstance(head.environment, dict):
        return False
    return all(base.environment.get(k) == head.environment.get(k) for k in keys)


def compare_reports(
    base: SessionReport,
    head: SessionReport,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Comparison:
    """Rows for every top-level workload and every changed one, plus head's collapses."""
    if base.scheme != head.scheme:
        raise IncomparableError(
            f"the reports use fingerprint schemes {base.scheme} and {head.scheme}: hashes are "
            "not comparable; regenerate the base report with the same pytest-workload"
        )
    timed = same_device(base, head)
    base_tests = {t.nodeid: t for t in base.tests}
    head_tests = {t.nodeid: t for t in head.tests}
    rows: list[Row] = []
    for nodeid in _ordered(base_tests, head_tests):
        b, h = base_tests.get(nodeid), head_tests.get(nodeid)
        changes = compare_documents(_document(b, base.scheme), _document(h, head.scheme))
        rows += [_change_row(nodeid, c) for c in changes]
        changed = {c.new.hash for c in changes if c.new is not None}
        base_times = _root_timings(b) if timed else {}
        rows += [
            _timed_row(nodeid, w, base_times.get(w.hash), tolerance)
            for w in (h.roots() if h is not None else ())
            if w.hash not in changed
        ]
    checks = KeyChecks()
    collapses = tuple(c for test in head.tests for c in checks.check(test))
    hashes_changed = any(r.base_hash != r.head_hash for r in rows)
    versions = versions_line(base.libraries, head.libraries) if hashes_changed else None
    return Comparison(tuple(rows), collapses, timings_compared=timed, libraries=versions)


def _ordered(base: dict[str, TestWorkloads], head: dict[str, TestWorkloads]) -> Iterable[str]:
    """Head's tests in its order, then those only the base had."""
    yield from head
    yield from (k for k in base if k not in head)
