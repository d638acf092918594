"""Merging shard reports: one session's report from the ``--workload-json`` of each CI shard.

Each shard ran part of the suite and checked collapses only among its own tests; the merge runs
the session-wide checks again over every shard, so two workloads that share a hash or a user
key in two shards are a collapse, as they would have been in one session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._core.errors import WorkloadError
from .._core.strict_json import Json
from .._workload.workload import TestWorkloads
from .collapse import Collapse, KeyChecks
from .compare import same_device
from .session_report import SessionReport


class MergeError(WorkloadError):
    """Shard reports that cannot be one session: other schemes, or a test in two shards."""


@dataclass(frozen=True)
class Shard:
    """One shard's report and the name it is known by (its file)."""

    name: str
    report: SessionReport


@dataclass(frozen=True)
class Merged:
    """The merged report, and the collapses found among its tests with the shard of each."""

    report: SessionReport
    collapses: tuple[tuple[Collapse, str, str], ...]


def _tests(shards: Sequence[Shard]) -> tuple[tuple[TestWorkloads, ...], dict[str, str]]:
    shard_of: dict[str, str] = {}
    tests: list[TestWorkloads] = []
    for shard in shards:
        for test in shard.report.tests:
            other = shard_of.get(test.nodeid)
            if other is not None:
                where = (
                    f"twice in {other}" if other == shard.name else f"in {other} and {shard.name}"
                )
                raise MergeError(f"test {test.nodeid} is {where}: shards must not overlap")
            shard_of[test.nodeid] = shard.name
            tests.append(test)
    return tuple(tests), shard_of


def _environment(shards: Sequence[Shard]) -> tuple[Json, tuple[str, ...]]:
    """The shards' common environment; None (timings not compared) where they differ."""
    first = shards[0].report
    if all(same_device(first, s.report) for s in shards[1:]):
        return first.environment, ()
    names = ", ".join(s.name for s in shards)
    return None, (
        f"the shards ({names}) were measured on different devices, torch versions or thread "
        "counts: the merged report carries no environment, so compare judges no timing",
    )


def merge_reports(shards: Sequence[Shard]) -> Merged:
    """One report from shard reports of one fingerprint scheme, tests in shard order."""
    if not shards:
        raise MergeError("no reports to merge")
    schemes = {s.report.scheme for s in shards}
    if len(schemes) > 1:
        listed = ", ".join(f"{s.name}: scheme {s.report.scheme}" for s in shards)
        raise MergeError(
            f"the shards use different fingerprint schemes ({listed}): their hashes are not "
            "comparable; run every shard with the same pytest-workload"
        )
    tests, shard_of = _tests(shards)
    checks = KeyChecks()
    collapses = tuple(
        (c, shard_of[c.first.nodeid], shard_of[c.second.nodeid])
        for test in tests
        for c in checks.check(test)
    )
    environment, mismatch = _environment(shards)
    problems = tuple(f"{s.name}: {p}" for s in shards for p in s.report.problems) + mismatch
    report = SessionReport(
        scheme=shards[0].report.scheme,
        tests=tests,
        environment=environment,
        problems=problems,
        notes=tuple(n for s in shards for n in s.report.notes),
    )
    return Merged(report, collapses)
