"""The one place that talks to syrupy: a snapshot extension for workload tables.

Each test gets one file, ``__workload_snapshots__/<test module>/<test name>.workloads``,
holding its :class:`~pytest_workload._snapshot.document.SnapshotDocument`. The directory is not
syrupy's ``__snapshots__``: syrupy run without this plugin (``-p no:workload``) cleans up
``__snapshots__`` and would delete every workload snapshot as an unknown collection. syrupy
owns when files are written (``--snapshot-update``) and which are unused, and the extension
writes only when syrupy asks it to; this module decides what matches, what the narrowed
updates (``--workload-migrate``, ``--workload-accept-upgrade``) let syrupy rewrite, and what a
mismatch means, through :mod:`pytest_workload._snapshot.diff`. It uses syrupy's public API
only: the ``snapshot`` fixture, ``with_defaults`` and the extension's methods.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.extensions.single_file import SingleFileSnapshotExtension

from .._core.errors import FileWriteError, WorkloadDataError
from .._core.files import outside, write_text_atomic
from .._core.text import Commands, one_line, versions_line
from .cost_diff import shrunk
from .diff import compare_documents, documents_match
from .document import SnapshotDocument
from .rewrites import Verdict, migration_verdict, upgrade_verdict
from .signatures_only import signature_changes
from .snapshot_files import (
    SNAPSHOT_DIRNAME,
    SNAPSHOT_SUFFIX,
    Stored,
    inspect_stored,
    may_stay,
    snapshot_stem,
)
from .snapshot_text import render_changes, shrunk_note, signature_note, update_hint
from .upgrade import upgrade_refusals

if TYPE_CHECKING:
    from syrupy.data import SnapshotCollection
    from syrupy.location import PyTestLocation
    from syrupy.types import SnapshotIndex

#: The ``snapshot`` fixture's value, as the gates above this module name it.
Snapshot = SnapshotAssertion
#: What a kept table is asserted against: nothing, since every stored table matches it.
_NOTHING: Final = ""


class WorkloadSnapshotExtension(SingleFileSnapshotExtension):
    """Stores a test's workload table as review-friendly JSON and compares it by identity.

    The one writer of workload snapshots, when syrupy writes: under ``--snapshot-update``, a
    stored table that does not match the recorded one (see :meth:`matches`)."""

    cost_tolerance: ClassVar[float] = 0.0
    #: Under ``--snapshot-update``: a table that matches but is unverified, not UTF-8, or
    #: holds costs that shrank is due a rewrite too, so it does not match.
    updating: ClassVar[bool] = False
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

    def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
        if serialized_data == snapshot_data:
            return True
        recorded = SnapshotDocument.from_text(str(serialized_data))
        return may_stay(str(snapshot_data), recorded, self.cost_tolerance, updating=self.updating)

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


@cache
def _extension(cost_tolerance: float, updating: bool) -> type[WorkloadSnapshotExtension]:
    """The extension comparing costs within ``cost_tolerance`` (syrupy takes a class)."""
    attributes = {"cost_tolerance": cost_tolerance, "updating": updating}
    return type(WorkloadSnapshotExtension.__name__, (WorkloadSnapshotExtension,), attributes)


def _display(location: str, rootdir: Path | None) -> str:
    if rootdir is not None and location.startswith(str(rootdir) + os.sep):
        return one_line(os.path.relpath(location, rootdir))
    return one_line(location)


@dataclass(frozen=True)
class SnapshotResult:
    """The outcome of one test's snapshot check: a failure message, or a note, or neither."""

    failure: str | None = None
    note: str | None = None
    #: The stored table this test used without checking it (syrupy counts it as passed).
    kept: str | None = None


def _location(assertion: SnapshotAssertion) -> str:
    return str(
        assertion.extension.get_location(
            test_location=assertion.test_location, index=assertion.index
        )
    )


def keep_snapshot(snapshot: SnapshotAssertion) -> SnapshotResult:
    """Mark a test's stored table as used without comparing or rewriting it: for a test that
    did not pass, a session without the gate, or a refused file. ``kept`` is the table's
    location, None when there is none."""
    assertion = snapshot.with_defaults(extension_class=KeptSnapshotExtension)
    location = _location(assertion)
    # with no stored table, syrupy would write what is asserted under --snapshot-update
    used = os.path.exists(location) and assertion == _NOTHING
    return SnapshotResult(kept=location if used else None)


def _refused(snapshot: SnapshotAssertion, failure: str) -> SnapshotResult:
    return SnapshotResult(failure=failure, kept=keep_snapshot(snapshot).kept)


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
    """Compare (or, under ``--snapshot-update``, let syrupy write) a test's table; a cost may
    grow by ``cost_tolerance`` (a fraction).

    With ``legacy`` (the recorded table under each older scheme this session can compute) or
    ``accept_upgrade``, ``--snapshot-update`` is narrowed to one rewrite: a snapshot of an
    older scheme is migrated if, and only if, its stored hashes still match under the scheme
    that wrote it; a snapshot whose change is only a library upgrade's rewording is accepted.
    Any other change fails and the file is left as it is. A test that recorded nothing and
    has no stored table has nothing to check. Without ``judge_signatures`` (a test recorded
    only by ``--workload-record=all``), a table that differs only in call signatures is a
    note, and the stored one is kept as it is, unless ``--snapshot-update`` rewrites it.
    """
    updating = bool(snapshot.update_snapshots)
    assertion = snapshot.with_defaults(extension_class=_extension(cost_tolerance, updating))
    location = _location(assertion)
    shown = _display(location, rootdir)
    narrowed = legacy is not None or accept_upgrade
    stored = _inspect(
        location, shown, document, rootdir, commands, repair=updating and not narrowed
    )
    if isinstance(stored, str):
        return _refused(snapshot, stored)
    if stored is None:
        return SnapshotResult()
    old = stored.document
    matching = old is not None and documents_match(old, document, cost_tolerance)
    if not judge_signatures and old is not None and (narrowed or not updating):
        changes = signature_changes(old, document, cost_tolerance)
        if changes:
            keep_snapshot(snapshot)  # used as it is, and counted as passed: it was checked
            return SnapshotResult(note=signature_note(changes))
    note = None
    if narrowed and not matching:
        refusal, note = _narrowed(
            old, shown, document, legacy, accept_upgrade, commands, cost_tolerance
        )
        if refusal is not None:
            return _refused(snapshot, refusal)
    elif stored.corrupt is not None:
        what = "" if stored.old else "corrupt "
        note = f"rewrote {what}workload snapshot {shown} ({one_line(stored.corrupt)})"
    if assertion == document:
        if old is not None and matching and note is None:
            note = shrunk_note(shown, shrunk(old, document), updating)
        return SnapshotResult(note=note)
    if updating:
        return SnapshotResult(failure=f"workload snapshot {shown} {_write_error(assertion)}")
    if old is None:
        return SnapshotResult(failure=_missing(shown, commands))
    return SnapshotResult(failure=explain_mismatch(shown, old, document, commands, cost_tolerance))


def _inspect(
    location: str,
    shown: str,
    document: SnapshotDocument,
    rootdir: Path | None,
    commands: Commands,
    *,
    repair: bool,
) -> Stored | str | None:
    """What is stored, or why the file is refused and left as it is (a plain
    ``--snapshot-update`` may ``repair`` a corrupt one); None: nothing recorded, nothing
    stored, nothing to check."""
    real = None if rootdir is None else outside(Path(location), rootdir)
    if real is not None:
        return (
            f"workload snapshot {shown} leads to {real}, outside the rootdir {rootdir}: "
            "it is left as it is and nothing is written there, also under --snapshot-update"
        )
    if not document.entries and not os.path.exists(location):
        return None
    try:
        SnapshotDocument.from_text(document.to_text())
    except WorkloadDataError as exc:  # what is written must read back, never as corrupt
        return (
            f"workload snapshot {shown} not written: the recorded table would not read back ({exc})"
        )
    stored = inspect_stored(Path(location), document.scheme)
    if stored.too_new is not None:
        return (
            f"workload snapshot {shown} was written by {one_line(stored.too_new)}: upgrade "
            "pytest-workload to check it. It is left as it is, also under --snapshot-update"
        )
    if stored.corrupt is None or repair:
        return stored
    if stored.old:
        return (
            f"workload snapshot {shown} is of {one_line(stored.corrupt)}; regenerate it with "
            f"{commands.accept}"
        )
    return _corrupt(shown, stored.corrupt, commands)


def _narrowed(
    old: SnapshotDocument | None,
    shown: str,
    document: SnapshotDocument,
    legacy: Mapping[int, SnapshotDocument] | None,
    accept_upgrade: bool,
    commands: Commands,
    tolerance: float,
) -> Verdict:
    """The one rewrite ``--workload-migrate`` or ``--workload-accept-upgrade`` allows for a
    stored table that does not match, or why there is none."""
    if old is None:
        return _missing(shown, commands), None
    if legacy is not None and old.scheme != document.scheme:
        return migration_verdict(old, shown, document, legacy, commands)
    if accept_upgrade and old.scheme == document.scheme:
        return upgrade_verdict(old, shown, document, commands)
    return explain_mismatch(shown, old, document, commands, tolerance), None


def _missing(shown: str, commands: Commands) -> str:
    return f"no workload snapshot {shown} for the recorded workloads; {update_hint(commands)}"


def _write_error(assertion: SnapshotAssertion) -> str:
    """Why syrupy could not write the table: the error it caught from the extension's write,
    on the assertion's one result (``executions``, the public record syrupy's report reads)."""
    error = next((r.exception for r in assertion.executions.values() if r.exception), None)
    if isinstance(error, FileWriteError):
        return f"could not be written: {one_line(error.reason)}"
    if isinstance(error, OSError):
        return f"could not be written: {one_line(str(error))}"
    return f"could not be checked: {one_line(str(error))}"


def _corrupt(shown: str, reason: str, commands: Commands) -> str:
    return (
        f"corrupt workload snapshot {shown}: {one_line(reason)}. It is left as it is; fix it or "
        f"regenerate it with {commands.accept}"
    )


def explain_mismatch(
    location: str,
    stored: SnapshotDocument,
    document: SnapshotDocument,
    commands: Commands,
    tolerance: float,
) -> str:
    """The failure message for a stored table that does not match the recorded one."""
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
