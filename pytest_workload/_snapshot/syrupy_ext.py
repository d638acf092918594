"""The one place that talks to syrupy: the extension that stores a test's workload table,
and the snapshot gate that asserts it.

Each test gets one file, ``__workload_snapshots__/<test module>/<test name>.workloads``, not in
syrupy's ``__snapshots__``, which syrupy run without this plugin (``-p no:workload``) would
clean up, deleting every workload snapshot as an unknown collection. syrupy owns when files are
written (``--snapshot-update``) and which are unused; the extension writes only when syrupy asks
it to. Only syrupy's public API is used: the ``snapshot`` fixture, ``with_defaults`` and the
extension's methods.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.extensions.single_file import SingleFileSnapshotExtension

from .._core.errors import FileWriteError
from .._core.files import held, restore, write_text_atomic
from .._core.notes import GateResult, Note
from .._core.text import PLAIN, Commands, one_line
from .._workload.workload import TestWorkloads
from .diff import documents_match, shrunk, signature_changes
from .document import SnapshotDocument
from .snapshot_files import SNAPSHOT_DIRNAME, SNAPSHOT_SUFFIX, inspect, snapshot_stem
from .snapshot_text import (
    Verdict,
    explain_mismatch,
    missing,
    shrunk_note,
    signature_note,
    upgrade_verdict,
)

if TYPE_CHECKING:
    from syrupy.data import SnapshotCollection
    from syrupy.location import PyTestLocation
    from syrupy.types import SnapshotIndex

#: The ``snapshot`` fixture's value, as the gates above this module name it.
Snapshot = SnapshotAssertion


class WorkloadSnapshotExtension(SingleFileSnapshotExtension):
    """Stores a test's workload table as review-friendly JSON; the one writer of workload
    snapshots, when syrupy writes. The gate asserts it only where there is no stored table or
    it may not stay as it is, so it compares texts, as syrupy does by default."""

    file_extension = SNAPSHOT_SUFFIX.removeprefix(".")
    snapshot_dirname = SNAPSHOT_DIRNAME

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        test_dir = Path(test_location.filepath).parent
        return str(test_dir / SNAPSHOT_DIRNAME / test_location.basename)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        name = AbstractSyrupyExtension.get_snapshot_name(test_location=test_location, index=index)
        return snapshot_stem(name)

    @classmethod
    def matches_test_location(
        cls, *, test_location: PyTestLocation, snapshot_location: str
    ) -> bool:
        """Whether the file is this test's: syrupy's prefix rules do not know the escapes."""
        path = Path(snapshot_location)
        return (
            path.parent == Path(cls.dirname(test_location=test_location))
            and path.name == cls.get_snapshot_name(test_location=test_location) + SNAPSHOT_SUFFIX
        ) or super().matches_test_location(
            test_location=test_location, snapshot_location=snapshot_location
        )

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> str | None:
        """The stored text; bytes that are not UTF-8 are kept as escapes, so that such a file
        never matches (and is rewritten under ``--snapshot-update``) instead of failing syrupy."""
        try:
            return Path(snapshot_location).read_bytes().decode("utf-8", "surrogateescape")
        except OSError:
            return None

    def serialize(self, data: Any, **_: Any) -> str:
        if not isinstance(data, SnapshotDocument):
            raise TypeError(f"expected a SnapshotDocument, got {type(data).__qualname__}")
        return data.to_text()

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        snapshot = next(iter(snapshot_collection))
        write_text_atomic(Path(snapshot_collection.location), str(snapshot.data))


class KeptSnapshotExtension(WorkloadSnapshotExtension):
    """Leaves a stored table as it is: it matches whatever is asserted, so syrupy counts it
    as used (and passed: syrupy has no count for "used, not checked") and never rewrites it.

    syrupy deletes, under ``--snapshot-update``, the snapshots no assertion used, also those
    of a test that failed; no public call marks a snapshot used without an assertion."""

    def serialize(self, data: Any, **_: Any) -> str:
        return ""

    def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
        return True


def _display(location: str, rootdir: Path | None) -> str:
    if rootdir is not None and location.startswith(str(rootdir) + os.sep):
        return one_line(os.path.relpath(location, rootdir))
    return one_line(location)


def _location(assertion: SnapshotAssertion) -> str:
    return str(
        assertion.extension.get_location(
            test_location=assertion.test_location, index=assertion.index
        )
    )


def _use(snapshot: SnapshotAssertion) -> str | None:
    """Mark a test's stored table as used without comparing or rewriting it; its location,
    None when there is none."""
    assertion = snapshot.with_defaults(extension_class=KeptSnapshotExtension)
    location = _location(assertion)
    # with no stored table, syrupy would write what is asserted under --snapshot-update; with
    # one, it matches whatever is asserted: nothing
    return location if os.path.exists(location) and assertion == "" else None


@dataclasses.dataclass
class SnapshotGate:
    """Compares each test's table, recorded under the session's scheme (under
    ``--snapshot-update``, syrupy writes the ones that differ); ``accept_upgrade`` narrows the
    update to tables whose change is only a library upgrade's."""

    accept_upgrade: bool = False
    rootdir: Path | None = None
    commands: Commands = PLAIN
    cost_tolerance: float = 0.0
    #: Stored tables not checked, so the summary says how many: under the gate, those used as
    #: they are (a failed test, a refused file), which syrupy counts as passed; without it,
    #: every recorded test's, never asserted.
    kept: list[str] = dataclasses.field(default_factory=list)
    #: What each test's update wrote over (None: nothing), until its teardown is over: a test
    #: that errs in teardown did not pass, and gets it back.
    _wrote: dict[str, tuple[str, bytes | None]] = dataclasses.field(default_factory=dict)

    def torn_down(self, nodeid: str, *, failed: bool) -> tuple[Note, ...]:
        """A test's teardown is over: forget what its update wrote over or, when the teardown
        failed, put it back; a note on what was put back."""
        wrote = self._wrote.pop(nodeid, None)
        if wrote is None or not failed or held(Path(wrote[0])) == (wrote[1],):
            return ()
        location, before = wrote
        shown = _display(location, self.rootdir)
        try:
            restore(Path(location), before)
        except FileWriteError as exc:
            note = f"workload snapshot {shown} could not be put back: {one_line(exc.reason)}"
        else:
            done = "not written" if before is None else "kept as it was"
            note = f"workload snapshot {shown} {done}: the test erred in teardown"
        return (Note(nodeid, note),)

    def keep(self, snapshot: Snapshot) -> None:
        """Leave the stored table as it is, counted as used (a failed test, a refused file)."""
        kept = _use(snapshot)
        if kept is not None:
            self.kept.append(kept)

    def skip(self, snapshot: Snapshot) -> None:
        """Without the gate: count the stored table as not checked, and assert nothing, so that
        syrupy neither counts it as passed nor, having no assertion of this extension, looks
        for unused workload snapshots to report or delete. (Its location is asked of the
        extension itself: any ``SnapshotAssertion`` made for it, even one never compared,
        registers with syrupy's session.)"""
        extension = WorkloadSnapshotExtension()
        location = str(
            extension.get_location(test_location=snapshot.test_location, index=snapshot.index)
        )
        if os.path.exists(location):
            self.kept.append(location)

    def check(
        self, snapshot: Snapshot, test: TestWorkloads, scheme: int, *, judge_signatures: bool = True
    ) -> GateResult:
        """Compare (or, under ``--snapshot-update``, let syrupy write) a test's table."""
        document = SnapshotDocument.of(scheme, test, test.modules, test.libraries)
        failure, note = self._judge(snapshot, document, test, judge_signatures)
        return GateResult(
            failures=() if failure is None else (failure,),
            notes=() if note is None else (Note(test.nodeid, note),),
        )

    def _judge(
        self,
        snapshot: Snapshot,
        document: SnapshotDocument,
        test: TestWorkloads,
        judge_signatures: bool,
    ) -> Verdict:
        """The failure or the note of one table. A narrowed ``--snapshot-update`` allows only
        its one rewrite (an accepted upgrade); any other change fails and leaves
        the file as it is. Without ``judge_signatures`` (a test recorded only by
        ``--workload-record=all``: its inputs may follow its data), a change in call signatures
        alone is a note, and the stored table is kept as it is, unless ``--snapshot-update``
        rewrites it."""
        updating = bool(snapshot.update_snapshots)
        tolerance, commands = self.cost_tolerance, self.commands
        assertion = snapshot.with_defaults(extension_class=WorkloadSnapshotExtension)
        location = _location(assertion)
        shown = _display(location, self.rootdir)
        narrowed_to_one = self.accept_upgrade
        repair = updating and not narrowed_to_one
        stored = inspect(location, shown, document, self.rootdir, commands, repair=repair)
        if isinstance(stored, str):
            self.keep(snapshot)
            return stored, None
        if stored is None:
            return None, None
        old = stored.document
        matching = old is not None and documents_match(old, document, tolerance)
        if not judge_signatures and old is not None and (narrowed_to_one or not updating):
            changes = signature_changes(old, document, tolerance)
            if changes:
                _use(snapshot)  # used as it is, and counted as passed: it was checked
                return None, signature_note(changes)
        note = None
        if narrowed_to_one and not matching:
            refusal: str | None
            if old is None:
                refusal = missing(shown, commands)
            else:
                refusal, note = upgrade_verdict(old, shown, document, commands)
            if refusal is not None:
                self.keep(snapshot)
                return refusal, None
        elif stored.corrupt is not None:
            what = "" if stored.old else "corrupt "
            note = f"rewrote {what}workload snapshot {shown} ({one_line(stored.corrupt)})"
        shrank = shrunk(old, document) if old is not None and matching else []
        # a matching table stays as it is, but under --snapshot-update not one that is
        # unverified, not UTF-8 (both corrupt) or holds costs that shrank: syrupy rewrites it
        if matching and not (updating and (stored.corrupt is not None or shrank)):
            _use(snapshot)  # used as it is, and counted as passed: it was checked
            return None, shrunk_note(shown, shrank, updating)
        before = held(Path(location)) if updating else None
        if assertion == document:
            if before is not None:
                self._wrote[test.nodeid] = (location, before[0])
            return None, note or shrunk_note(shown, shrank, updating)
        if updating:
            return f"workload snapshot {shown} {_write_error(assertion)}", None
        if old is None:
            return missing(shown, commands), None
        return explain_mismatch(shown, old, document, commands, tolerance), None


def _write_error(assertion: SnapshotAssertion) -> str:
    """Why syrupy could not write the table: the error it caught from the extension's write,
    on the assertion's one result (``executions``, the public record syrupy's report reads)."""
    error = next((r.exception for r in assertion.executions.values() if r.exception), None)
    if isinstance(error, FileWriteError):
        return f"could not be written: {one_line(error.reason)}"
    if isinstance(error, OSError):
        return f"could not be written: {one_line(str(error))}"
    return f"could not be checked: {one_line(str(error))}"
