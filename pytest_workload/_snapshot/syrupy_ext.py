"""The one place that talks to syrupy: a snapshot extension for workload tables.

Each test gets one file, ``__workload_snapshots__/<test module>/<test name>.workloads``,
holding its :class:`~pytest_workload._snapshot.document.SnapshotDocument`. The directory is not
syrupy's ``__snapshots__``: syrupy run without this plugin (``-p no:workload``) cleans up
``__snapshots__`` and would delete every workload snapshot as an unknown collection. syrupy
owns when files are written (``--snapshot-update``) and which are unused; this module decides
what matches and what a mismatch means, through :mod:`pytest_workload._snapshot.diff`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from syrupy.assertion import SnapshotAssertion
from syrupy.data import SnapshotCollections
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from .._core.commands import Commands
from .._core.errors import FileWriteError, WorkloadDataError
from .._core.files import outside, write_text_atomic
from .._core.library_versions import versions_line
from .._core.text import one_line
from .diff import compare_documents, documents_match
from .document import SnapshotDocument
from .rewrites import rewrite_migrated, rewrite_upgraded
from .signatures_only import signature_changes
from .snapshot_files import (
    SNAPSHOT_DIRNAME,
    SNAPSHOT_SUFFIX,
    inspect_stored,
    read_stored,
    shrunk_note,
    snapshot_stem,
)
from .snapshot_text import render_changes, signature_note, update_hint
from .upgrade import upgrade_refusals

if TYPE_CHECKING:
    from syrupy.data import SnapshotCollection
    from syrupy.location import PyTestLocation
    from syrupy.session import SnapshotSession
    from syrupy.types import SnapshotIndex

#: The ``snapshot`` fixture's value, as the gates above this module name it.
Snapshot = SnapshotAssertion


@dataclass(frozen=True)
class _Kept:
    """A stored file's own text: asserted against itself, it counts as used and is never
    rewritten (syrupy deletes, under ``--snapshot-update``, what no test used)."""

    text: str


class WorkloadSnapshotExtension(SingleFileSnapshotExtension):
    """Stores a test's workload table as review-friendly JSON and compares it by identity."""

    _write_mode = WriteMode.TEXT
    cost_tolerance: ClassVar[float] = 0.0
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
        """The stored text; bytes that are not UTF-8 are replaced, so that such a file reads
        as corrupt (and is rewritten under ``--snapshot-update``) instead of failing syrupy."""
        return _decoded(Path(snapshot_location))

    def serialize(self, data: Any, **_: Any) -> str:
        if isinstance(data, _Kept):
            return data.text
        if not isinstance(data, SnapshotDocument):
            raise TypeError(f"expected a SnapshotDocument, got {type(data).__qualname__}")
        return data.to_text()

    def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
        if serialized_data == snapshot_data:
            return True
        # An unreadable stored file does not match, so --snapshot-update rewrites it; the
        # gate reports it as corrupt rather than as a difference.
        try:
            old = SnapshotDocument.from_text(str(snapshot_data))
        except WorkloadDataError:
            return False
        recorded = SnapshotDocument.from_text(str(serialized_data))
        return documents_match(old, recorded, self.cost_tolerance)

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        snapshot = next(iter(snapshot_collection))
        write_text_atomic(Path(snapshot_collection.location), str(snapshot.data))


@cache
def _extension(cost_tolerance: float) -> type[WorkloadSnapshotExtension]:
    """The extension comparing costs within ``cost_tolerance`` (syrupy takes a class)."""
    name, attributes = WorkloadSnapshotExtension.__name__, {"cost_tolerance": cost_tolerance}
    return type(name, (WorkloadSnapshotExtension,), attributes)


def _display(location: str, rootdir: Path | None) -> str:
    if rootdir is not None and location.startswith(str(rootdir) + os.sep):
        return one_line(os.path.relpath(location, rootdir))
    return one_line(location)


@dataclass(frozen=True)
class SnapshotResult:
    """The outcome of one test's snapshot check: a failure message, or a note, or neither."""

    failure: str | None = None
    note: str | None = None
    #: The stored table this test used without checking it, which syrupy counts as passed
    #: until :func:`uncount_kept` takes it out.
    kept: str | None = None


def _location(assertion: SnapshotAssertion) -> str:
    return str(
        assertion.extension.get_location(
            test_location=assertion.test_location, index=assertion.index
        )
    )


def _decoded(path: Path) -> str | None:
    """A stored table's text with bytes that are not UTF-8 replaced; None if there is none."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


def keep_snapshot(snapshot: SnapshotAssertion) -> SnapshotResult:
    """Mark a test's stored table as used without comparing or rewriting it: for a test that
    did not pass, or a session without the gate, whose table says nothing about the stored
    one. ``kept`` is the table's location, None when there is none."""
    assertion = snapshot.use_extension(WorkloadSnapshotExtension)
    location = _location(assertion)
    text = _decoded(Path(location))
    if text is not None:
        assertion == _Kept(text)  # noqa: B015 (a match that syrupy records as a use)
    return SnapshotResult(kept=None if text is None else location)


def uncount_kept(syrupy_session: SnapshotSession | None, kept: Collection[str]) -> None:
    """Take kept tables out of syrupy's "snapshots passed": they were used, not checked.

    Called after syrupy built its report (on the xdist controller: after it merged its
    workers'), before the terminal summary prints it."""
    report = None if syrupy_session is None else syrupy_session.report
    if report is None or not kept:
        return
    checked, unchecked = SnapshotCollections(), set(kept)
    for collection in report.matched:
        if collection.location not in unchecked:
            checked.add(collection)
    report.matched = checked


def check_snapshot(
    snapshot: SnapshotAssertion,
    document: SnapshotDocument,
    commands: Commands,
    rootdir: Path | None = None,
    legacy: Mapping[int, SnapshotDocument] | None = None,
    accept_upgrade: bool = False,
    judge_signatures: bool = True,
    cost_tolerance: float = 0.0,
) -> SnapshotResult:
    """Compare (or, under ``--snapshot-update``, write) a test's table; a cost may grow by
    ``cost_tolerance`` (a fraction).

    With ``legacy`` (the recorded table under each older scheme this session can compute), a
    snapshot of an older scheme is first migrated: rewritten under the current scheme if, and
    only if, its stored hashes still match under the scheme that wrote it. With
    ``accept_upgrade``, a snapshot whose change is only a library upgrade's rewording is
    rewritten; any other change is refused and the file left alone. A test that recorded
    nothing and has no stored table has nothing to check. Without ``judge_signatures`` (a test
    recorded only by ``--workload-record=all``), a table that differs only in call signatures
    is a note, and the stored one is kept as it is, unless ``--snapshot-update`` rewrites it.
    """
    assertion = snapshot.use_extension(_extension(cost_tolerance))
    location = _location(assertion)
    shown = _display(location, rootdir)
    real = None if rootdir is None else outside(Path(location), rootdir)
    if real is not None:
        return SnapshotResult(
            failure=f"workload snapshot {shown} leads to {real}, outside the rootdir {rootdir}: "
            "it is left as it is and nothing is written there, also under --snapshot-update",
            kept=keep_snapshot(snapshot).kept,
        )
    if not document.entries and not os.path.exists(location):
        return SnapshotResult()
    try:
        SnapshotDocument.from_text(document.to_text())
    except WorkloadDataError as exc:  # what is written must read back, never as corrupt
        return SnapshotResult(
            failure=f"workload snapshot {shown} not written: the recorded table would not read "
            f"back ({exc})",
            kept=keep_snapshot(snapshot).kept,
        )
    stored = inspect_stored(Path(location), document.scheme)
    if stored.too_new is not None:
        return SnapshotResult(
            failure=f"workload snapshot {shown} was written by {one_line(stored.too_new)}: upgrade "
            "pytest-workload to check it. It is left as it is, also under --snapshot-update",
            kept=keep_snapshot(snapshot).kept,
        )
    updating = bool(assertion.session.update_snapshots)
    if stored.corrupt is not None and not updating:
        failure = (
            f"workload snapshot {shown} is of {one_line(stored.corrupt)}; regenerate it with "
            f"{commands.accept}"
            if stored.old
            else _corrupt(shown, stored.corrupt, commands)
        )
        return SnapshotResult(failure=failure, kept=keep_snapshot(snapshot).kept)
    note = None
    if stored.corrupt is not None:
        # rewritten here: a hand-edited entry may still match by hash, so syrupy would not
        try:
            write_text_atomic(Path(location), document.to_text())
        except FileWriteError as exc:
            return SnapshotResult(
                failure=f"workload snapshot {shown} could not be written: {one_line(exc.reason)}"
            )
        what = "" if stored.old else "corrupt "
        note = f"rewrote {what}workload snapshot {shown} ({one_line(stored.corrupt)})"
    if legacy is not None and os.path.exists(location):
        refusal, migrated = rewrite_migrated(Path(location), shown, document, legacy, commands)
        if refusal is not None:
            return SnapshotResult(failure=refusal, kept=keep_snapshot(snapshot).kept)
        note = _join(note, migrated)
    if accept_upgrade and not updating and os.path.exists(location):
        refusal, accepted = rewrite_upgraded(Path(location), shown, document, commands)
        if refusal is not None:
            return SnapshotResult(failure=refusal, kept=keep_snapshot(snapshot).kept)
        note = _join(note, accepted)
    if not judge_signatures and not updating:
        stored_table = read_stored(Path(location))
        changes = (
            None
            if stored_table is None
            else signature_changes(stored_table, document, cost_tolerance)
        )
        if changes:
            keep_snapshot(snapshot)  # used as it is, and counted as passed: it was checked
            return SnapshotResult(note=_join(note, signature_note(changes)))
    if assertion == document:
        return SnapshotResult(
            note=_join(note, shrunk_note(Path(location), shown, document, updating))
        )
    result = assertion.executions[assertion.num_executions - 1]
    if isinstance(result.exception, FileWriteError):
        reason = one_line(result.exception.reason)
        failure = f"workload snapshot {shown} could not be written: {reason}"
    elif isinstance(result.exception, OSError):
        failure = (
            f"workload snapshot {shown} could not be written: {one_line(str(result.exception))}"
        )
    elif result.exception is not None:
        failure = (
            f"workload snapshot {shown} could not be checked: {one_line(str(result.exception))}"
        )
    elif result.recalled_data is None:
        failure = (
            f"no workload snapshot {shown} for the recorded workloads; {update_hint(commands)}"
        )
    else:
        failure = explain_mismatch(
            shown, str(result.recalled_data), document, commands, cost_tolerance
        )
    return SnapshotResult(failure=failure, note=note)


def _join(first: str | None, second: str | None) -> str | None:
    return "\n".join(n for n in (first, second) if n) or None


def _corrupt(shown: str, reason: str, commands: Commands) -> str:
    return (
        f"corrupt workload snapshot {shown}: {one_line(reason)}. It is left as it is; fix it or "
        f"regenerate it with {commands.accept}"
    )


def explain_mismatch(
    location: str, text: str, document: SnapshotDocument, commands: Commands, tolerance: float
) -> str:
    """The failure message for a stored table that does not match the recorded one."""
    try:
        stored = SnapshotDocument.from_text(text)
    except WorkloadDataError as exc:
        return _corrupt(location, str(exc), commands)
    if stored.scheme != document.scheme:
        return (
            f"workload snapshot {location} was written by fingerprint scheme {stored.scheme}; "
            f"this run uses scheme {document.scheme}. Migrate it with {commands.migrate}, "
            f"which first checks every stored hash under scheme {stored.scheme}, or "
            f"regenerate it with {commands.accept}"
        )
    lines = [f"workload snapshot mismatch ({location}):"]
    versions = versions_line(stored.libraries, document.libraries)
    lines += [f"  {one_line(versions)}"] if versions else []
    lines += [f"  {c}" for c in render_changes(compare_documents(stored, document, tolerance))]
    if not upgrade_refusals(stored, document):
        lines.append(
            "only configuration text, attributes or class paths changed (parameters, "
            "children, inputs, FLOPs and computations did not): accept it with "
            f"{commands.accept_upgrade}"
        )
    lines.append(update_hint(commands))
    return "\n".join(lines)
