"""The one place that talks to syrupy, through its public API only (the ``snapshot`` fixture,
``with_defaults`` and the extension's methods): the extension that reads and stores a test's
workload table, and the snapshot gate that asserts it. A test's file is
``__workload_snapshots__/<test module>/<test name>.workloads``, outside syrupy's
``__snapshots__``, which syrupy run without this plugin would clean up as an unknown collection.
What syrupy owns (writes, unused files) and when the extension reads: see
docs/explanation/snapshot-gate.md."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.extensions.single_file import SingleFileSnapshotExtension

from .._core.errors import FileWriteError
from .._core.files import held, outside, restore, write_text_atomic
from .._core.notes import Note
from .._core.text import PLAIN, Commands, one_line
from .._workload.workload import TestWorkloads
from .snapshot_files import (
    SNAPSHOT_DIRNAME,
    SNAPSHOT_SUFFIX,
    Stored,
    read_stored,
    snapshot_stem,
    snapshot_text,
)
from .verdict import Verdict, judge

if TYPE_CHECKING:
    from syrupy.data import SnapshotCollection
    from syrupy.location import PyTestLocation
    from syrupy.types import SnapshotIndex

#: The ``snapshot`` fixture's value, as the gates above this module name it.
Snapshot = SnapshotAssertion
#: What the gate asserts to use a stored table as it is: it matches any file there is, so
#: syrupy counts it as used (and passed: syrupy has no count for "used, not checked") and never
#: rewrites it. syrupy deletes, under ``--snapshot-update``, the snapshots no assertion used,
#: also those of a test that failed; no public call marks a snapshot used without an assertion.
KEEP: Final = ""


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

    def __init__(self) -> None:
        super().__init__()
        self._stored: dict[str, Stored] = {}

    def stored(self, location: str) -> Stored:
        """What the file holds: read once, then shared by the gate and syrupy's comparison."""
        if location not in self._stored:
            self._stored[location] = read_stored(Path(location))
        return self._stored[location]

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> str | None:
        stored = self.stored(snapshot_location)
        return stored.text if stored.exists else None

    def serialize(self, data: Any, **_: Any) -> str:
        """What the gate asserts: a test's table, else :data:`KEEP` (``data == KEEP`` would
        call the table's ``__eq__``: one more move between modules on the gate's path)."""
        return snapshot_text(data) if isinstance(data, TestWorkloads) else KEEP

    def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
        """A stored table that stays as it is (:data:`KEEP`), or one whose text is the
        recorded one's."""
        return bool(serialized_data in (KEEP, snapshot_data))

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        snapshot = next(iter(snapshot_collection))
        write_text_atomic(Path(snapshot_collection.location), str(snapshot.data))


def _display(location: str, rootdir: Path | None) -> str:
    if rootdir is not None and location.startswith(str(rootdir) + os.sep):
        return one_line(os.path.relpath(location, rootdir))
    return one_line(location)


def _assertion(snapshot: SnapshotAssertion) -> tuple[SnapshotAssertion, str, Stored]:
    """The assertion of a test's workload table, asserted once, its file's location, and what
    the file holds."""
    assertion = snapshot.with_defaults(extension_class=WorkloadSnapshotExtension)
    extension = assertion.extension
    assert isinstance(extension, WorkloadSnapshotExtension)
    where = extension.get_location(test_location=assertion.test_location, index=assertion.index)
    return assertion, str(where), extension.stored(str(where))


def _use(assertion: SnapshotAssertion) -> bool:
    """Assert that the stored table stays as it is: syrupy counts it as used."""
    return assertion == KEEP


@dataclasses.dataclass
class SnapshotGate:
    """Compares each test's table (under ``--snapshot-update``, syrupy writes the ones that
    differ); ``accept_upgrade`` narrows the update to tables whose change is only a library
    upgrade's."""

    accept_upgrade: bool = False
    rootdir: Path | None = None
    commands: Commands = PLAIN
    cost_tolerance: float = 0.0
    #: Stored tables not checked, so the summary says how many: under the gate, those used as
    #: they are (a failed test, a refused file), which syrupy counts as passed; without it,
    #: every recorded test's, never asserted.
    kept: list[str] = dataclasses.field(default_factory=list)
    #: Collected tests that did not run (deselected, or an error in setup): syrupy counts
    #: their snapshots as unused.
    not_run: dict[str, None] = dataclasses.field(default_factory=dict)
    #: The tests collected, beside whose modules the snapshot directories are.
    nodeids: Sequence[str] = ()
    #: What each test's update wrote over (None: nothing), until its teardown is over: a test
    #: that errs in teardown did not pass, and gets it back.
    _wrote: dict[str, tuple[str, bytes | None]] = dataclasses.field(default_factory=dict)

    def unused_refusal(self, *, finished: bool) -> str | None:
        """Why an update must delete no snapshot as unused: a run that did not ``finish``
        (Ctrl-C, also twice, ``-x``), a test that did not run, or a snapshot directory beside
        the tests (or one within it) that a symlink takes out of the rootdir, since syrupy's
        cleanup deletes unused files where it walks; None: it may."""
        if not finished:
            return "the run was cut short"
        if self.not_run:
            count = len(self.not_run)
            return (
                f"{count} collected test{'s' if count > 1 else ''} did not run (deselected, or "
                "an error in setup)"
            )
        root = self.rootdir
        if root is None:
            return None
        test_dirs = ((root / n.split("::", 1)[0]).parent for n in self.nodeids)
        # (os.walk yields nothing for a folder that is not there or not a directory)
        for folder in dict.fromkeys(d / SNAPSHOT_DIRNAME for d in test_dirs):
            for top, dirs, _ in os.walk(folder):
                for path in (Path(top), *(Path(top) / d for d in dirs)):
                    real = outside(path, root)
                    if real is not None:
                        where = f"{one_line(str(path))} leads to {one_line(real)}"
                        return f"{where}, outside the rootdir {one_line(str(root))}"
        return None

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
        self._keep(*_assertion(snapshot))

    def _keep(self, assertion: SnapshotAssertion, location: str, stored: Stored) -> None:
        # with no stored table, syrupy would write what is asserted under --snapshot-update
        if stored.exists and _use(assertion):
            self.kept.append(location)

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
        self, snapshot: Snapshot, test: TestWorkloads, *, judge_signatures: bool = True
    ) -> tuple[Verdict, str | None]:
        """Judge a test's table, then do what the verdict names: use the stored table as it
        is, or assert the recorded one (under ``--snapshot-update``, syrupy writes it). The
        verdict, and what it says."""
        document = test.folded()
        assertion, location, stored = _assertion(snapshot)
        shown = _display(location, self.rootdir)
        real = None if self.rootdir is None else outside(Path(location), self.rootdir)
        if real is not None:
            self._keep(assertion, location, stored)
            return (
                Verdict.REFUSED,
                f"workload snapshot {shown} leads to {real}, outside the rootdir {self.rootdir}: "
                "it is left as it is and nothing is written there, also under --snapshot-update",
            )
        updating = bool(snapshot.update_snapshots)
        verdict, text = judge(
            stored,
            document,
            shown,
            updating=updating,
            accept_upgrade=self.accept_upgrade,
            judge_signatures=judge_signatures,
            tolerance=self.cost_tolerance,
            commands=self.commands,
        )
        if verdict is Verdict.REFUSED:
            self._keep(assertion, location, stored)
        elif verdict is Verdict.MATCHED:
            _use(assertion)  # counted as passed: it was checked
        elif verdict is not Verdict.NOTHING:
            before = (stored.held or held(Path(location))) if updating else None
            written = assertion == document  # (without --snapshot-update, it fails)
            if updating and not written:
                return Verdict.UNWRITTEN, f"workload snapshot {shown} {_write_error(assertion)}"
            if before is not None:
                self._wrote[test.nodeid] = (location, before[0])
        return verdict, text


def _write_error(assertion: SnapshotAssertion) -> str:
    """Why syrupy could not write the table: the error it caught from the extension's write,
    on the assertion's one result (``executions``, the public record syrupy's report reads)."""
    error = next((r.exception for r in assertion.executions.values() if r.exception), None)
    if isinstance(error, OSError):
        reason = error.reason if isinstance(error, FileWriteError) else str(error)
        return f"could not be written: {one_line(reason)}"
    return f"could not be checked: {one_line(str(error))}"
