"""The snapshot gate: a test's workload table against its stored one, through syrupy."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._core.notes import GateResult, Note
from .._core.text import PLAIN, Commands
from .._fingerprint.scheme import FingerprintScheme
from .._workload.workload import TestWorkloads
from .document import SnapshotDocument, SnapshotEntry, fold

if TYPE_CHECKING:
    from .syrupy_ext import Snapshot


class SnapshotGate:
    """Compares each test's table, recorded under the session's scheme (under
    ``--snapshot-update``, syrupy writes the ones that differ); ``migrate`` narrows the update
    to tables stored by one of ``legacy_schemes`` that still verify under it, and
    ``accept_upgrade`` to tables whose change is only a library upgrade's."""

    def __init__(
        self,
        legacy_schemes: Sequence[FingerprintScheme] = (),
        *,
        migrate: bool = False,
        accept_upgrade: bool = False,
        rootdir: Path | None = None,
        commands: Commands = PLAIN,
        cost_tolerance: float = 0.0,
    ) -> None:
        self.legacy_schemes = tuple(legacy_schemes)
        self.commands = commands
        self.migrate = migrate
        self.accept_upgrade = accept_upgrade
        self.rootdir = rootdir
        self.cost_tolerance = cost_tolerance
        #: Stored tables used but not checked (a failed test, no gate, a refused file): syrupy
        #: counts them as passed, so the summary says how many were not checked.
        self.kept: list[str] = []

    def check(
        self, snapshot: Snapshot, test: TestWorkloads, scheme: int, *, judge_signatures: bool = True
    ) -> GateResult:
        """``judge_signatures=False`` for a test recorded only by ``--workload-record=all``:
        its call signatures may follow its data, so a change in them alone is a note."""
        from .syrupy_ext import check_snapshot

        document = SnapshotDocument.of(scheme, test, test.modules, test.libraries)
        legacy = self._legacy_documents(test) if self.migrate else None
        result = check_snapshot(
            snapshot,
            document,
            self.commands,
            self.rootdir,
            legacy,
            self.accept_upgrade,
            judge_signatures,
            self.cost_tolerance,
        )
        if result.kept is not None:
            self.kept.append(result.kept)
        return GateResult(
            failures=() if result.failure is None else (result.failure,),
            notes=() if result.note is None else (Note(test.nodeid, result.note),),
        )

    def keep(self, snapshot: Snapshot) -> None:
        """Leave the stored table as it is, counted as used (a failed test, or no gate)."""
        from .syrupy_ext import keep_snapshot

        result = keep_snapshot(snapshot)
        if result.kept is not None:
            self.kept.append(result.kept)

    def _legacy_documents(self, test: TestWorkloads) -> dict[int, SnapshotDocument]:
        """The test's table as each older scheme would have written it."""
        documents = {}
        for scheme in self.legacy_schemes:
            alternate = {
                w.hash: a for w in test for a in w.alternates if a.scheme == scheme.version
            }
            entries = fold(
                dataclasses.replace(
                    SnapshotEntry.from_workload(w),
                    structure_hash=alternate[w.hash].structure_hash,
                    hash=alternate[w.hash].hash,
                    parent=None if w.parent is None else alternate[w.parent].hash,
                )
                for w in test
            )
            computations = SnapshotDocument.of(scheme.version, test).computations
            documents[scheme.version] = SnapshotDocument(scheme.version, entries, computations)
        return documents
