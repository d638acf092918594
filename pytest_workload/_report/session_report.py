"""The JSON report: every test's workloads of one session, under one fingerprint scheme."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .._core.errors import FutureFormatError, OldFormatError, WorkloadDataError
from .._core.files import FINGERPRINT_SCHEME, REPORT_SCHEMA_VERSION
from .._core.notes import Note
from .._core.strict_json import Json, read_field, read_object
from .._workload.modules import modules_to_dict, read_modules
from .._workload.timing import BUDGET_SPENT, Measured
from .._workload.workload import TestWorkloads


def _count(tests: Sequence[TestWorkloads], how: Callable[[Measured], bool]) -> int:
    """Workloads of ``tests`` whose ``measured`` says ``how``."""
    return sum(1 for t in tests for w in t.workloads if w.measured is not None and how(w.measured))


def count_not_timed(tests: Sequence[TestWorkloads]) -> int:
    """Workloads of ``tests`` that the session's timing budget left untimed."""
    return _count(tests, lambda m: m.timing == BUDGET_SPENT)


def count_not_replayed(tests: Sequence[TestWorkloads]) -> int:
    """Top-level workloads of ``tests`` not replayed for timing, beside other xdist workers."""
    return _count(tests, lambda m: m.unreplayed_for_xdist)


@dataclass(frozen=True)
class SessionReport:
    """A session's JSON report, as ``--workload-json`` writes it and ``read_report`` reads it.

    Example:
        ```python
        report = read_report(Path("workloads.json"))
        hashes = {w.hash for test in report.tests for w in test}
        ```

    Attributes:
        scheme: The fingerprint scheme every hash in it was computed under.
        tests: Every test that recorded workloads, in the order the session ran them.
        environment: Where the timings were measured (device, torch, threads, CPU, Python,
            platform), as JSON; None when the session imported no torch.
        problems: What the session could not record, one line each (for example the tests of
            a crashed xdist worker).
        notes: What the session noted that failed nothing, with the test each came from (the
            terminal counts them by kind).
    """

    scheme: int
    tests: tuple[TestWorkloads, ...]
    environment: Json = None
    problems: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()

    @property
    def libraries(self) -> dict[str, str]:
        """The library versions its tests recorded."""
        return {k: v for t in self.tests for k, v in t.libraries.items()}

    @property
    def not_timed(self) -> int:
        """Workloads the session's timing budget left untimed."""
        return count_not_timed(self.tests)

    @property
    def not_replayed(self) -> int:
        """Top-level workloads not replayed for timing, beside other xdist workers."""
        return count_not_replayed(self.tests)

    def to_dict(self) -> dict[str, Json]:
        """The report as the JSON file holds it (current schema)."""
        data: dict[str, Json] = {
            "schema_version": REPORT_SCHEMA_VERSION,
            "fingerprint_scheme": self.scheme,
            "environment": self.environment,
            "problems": list(self.problems),
            "notes": [n.to_dict() for n in self.notes],
        }
        not_timed = self.not_timed
        if not_timed:  # (each of them says so in its measured.timing too)
            data["not_timed"] = not_timed
        not_replayed = self.not_replayed
        if not_replayed:  # (likewise)
            data["not_replayed"] = not_replayed
        data["tests"] = [t.to_dict(modules=False) for t in self.tests]
        data["modules"] = modules_to_dict({k: v for t in self.tests for k, v in t.modules.items()})
        return data

    @classmethod
    def from_dict(cls, data: object) -> SessionReport:
        """The report from parsed JSON; malformed data raises ``WorkloadError`` (a
        ``ValueError`` too)."""
        d = read_object(data, "report")
        version = read_field(d, "schema_version", int)
        if version < REPORT_SCHEMA_VERSION:
            raise OldFormatError(f"report schema_version {version}", str(REPORT_SCHEMA_VERSION))
        if version != REPORT_SCHEMA_VERSION:
            raise WorkloadDataError(
                f"report schema_version {version} is not supported (this release reads "
                f"{REPORT_SCHEMA_VERSION})"
            )
        scheme = read_field(d, "fingerprint_scheme", int)
        if scheme > FINGERPRINT_SCHEME:
            raise FutureFormatError(
                f"fingerprint scheme {scheme} (this release computes scheme {FINGERPRINT_SCHEME}): "
                "upgrade pytest-workload to read it"
            )
        if scheme < 1:
            raise WorkloadDataError(f"field 'fingerprint_scheme' must be at least 1, got {scheme}")
        modules = read_modules(d.get("modules", {}))
        tests = tuple(TestWorkloads.from_dict(t, modules) for t in read_field(d, "tests", list))
        seen: set[str] = set()
        for test in tests:
            if test.nodeid in seen:
                raise WorkloadDataError(f"test {test.nodeid!r} is listed twice")
            seen.add(test.nodeid)
        return cls(
            scheme=scheme,
            tests=tests,
            environment=d.get("environment"),
            problems=tuple(str(p) for p in read_field(d, "problems", list, optional=True) or ()),
            notes=tuple(map(Note.from_dict, read_field(d, "notes", list, optional=True) or ())),
        )
