"""The one place that talks to syrupy: a snapshot extension for workload tables.

Each test gets one file, ``__snapshots__/<test module>/<test name>.workloads``, holding its
:class:`~pytest_workload._model.snapshot.SnapshotDocument`. syrupy owns when files are written
(``--snapshot-update``) and which are unused; this module decides what matches and what a
mismatch means, through :mod:`pytest_workload._verdict.diff`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from .._model.errors import WorkloadDataError
from .._model.files import write_text_atomic
from .._model.snapshot import SnapshotDocument
from .._model.versions import SNAPSHOT_FORMAT, SNAPSHOT_FORMAT_KEY
from .._render.failures import UPDATE_HINT, render_changes
from .._verdict.diff import compare_documents, documents_match

if TYPE_CHECKING:
    from syrupy.data import SnapshotCollection

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
    file_extension = "workloads"

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
        return documents_match(old, SnapshotDocument.from_text(str(serialized_data)))

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        snapshot = next(iter(snapshot_collection))
        write_text_atomic(Path(snapshot_collection.location), str(snapshot.data))


def _display(location: str, rootdir: Path | None) -> str:
    if rootdir is not None and location.startswith(str(rootdir) + os.sep):
        return os.path.relpath(location, rootdir)
    return location


@dataclass(frozen=True)
class SnapshotResult:
    """The outcome of one test's snapshot check: a failure message, or a note, or neither."""

    failure: str | None = None
    note: str | None = None


MIGRATE_COMMAND = "pytest --workload-snapshot --workload-migrate"


def _location(assertion: SnapshotAssertion) -> str:
    return str(
        assertion.extension.get_location(
            test_location=assertion.test_location, index=assertion.index
        )
    )


def keep_snapshot(snapshot: SnapshotAssertion) -> None:
    """Mark a test's stored table as used without comparing or rewriting it: for a test that
    failed, or a session without the gate, whose table says nothing about the stored one."""
    assertion = snapshot.use_extension(WorkloadSnapshotExtension)
    try:
        text = Path(_location(assertion)).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return  # no stored table (or one syrupy cannot read either): nothing to keep
    assertion == _Kept(text)  # noqa: B015 (a match that syrupy records as a use)


def _too_new(path: Path, scheme: int) -> str | None:
    """What makes a stored table too new for this release to read or rewrite, if anything."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    layout, stored_scheme = data.get(SNAPSHOT_FORMAT_KEY), data.get("fingerprint_scheme")
    if isinstance(layout, int) and layout > SNAPSHOT_FORMAT:
        return f"snapshot format {layout} (this release reads format {SNAPSHOT_FORMAT})"
    if isinstance(stored_scheme, int) and stored_scheme > scheme:
        return f"fingerprint scheme {stored_scheme} (this release computes scheme {scheme})"
    return None


def check_snapshot(
    snapshot: SnapshotAssertion,
    document: SnapshotDocument,
    rootdir: Path | None = None,
    legacy: Mapping[int, SnapshotDocument] | None = None,
) -> SnapshotResult:
    """Compare (or, under ``--snapshot-update``, write) a test's table.

    With ``legacy`` (the recorded table under each older scheme this session can compute), a
    snapshot of an older scheme is first migrated: rewritten under the current scheme if, and
    only if, its stored hashes still match under the scheme that wrote it. A test that
    recorded nothing and has no stored table has nothing to check.
    """
    assertion = snapshot.use_extension(WorkloadSnapshotExtension)
    location = _location(assertion)
    shown = _display(location, rootdir)
    if not document.entries and not os.path.exists(location):
        return SnapshotResult()
    too_new = _too_new(Path(location), document.scheme)
    if too_new is not None:
        keep_snapshot(snapshot)
        return SnapshotResult(
            failure=f"workload snapshot {shown} was written by {too_new}: upgrade "
            "pytest-workload to check it. It is left as it is, also under --snapshot-update"
        )
    note = None
    if legacy is not None and os.path.exists(location):
        refusal, note = _migrate(Path(location), shown, document, legacy)
        if refusal is not None:
            keep_snapshot(snapshot)
            return SnapshotResult(failure=refusal)
    if assertion == document:
        return SnapshotResult(note=note)
    result = assertion.executions[assertion.num_executions - 1]
    if isinstance(result.exception, OSError):
        failure = f"workload snapshot {shown} could not be written: {result.exception}"
    elif result.exception is not None:
        failure = f"workload snapshot {shown} could not be checked: {result.exception}"
    elif result.recalled_data is None:
        failure = f"no workload snapshot {shown} for the recorded workloads; {UPDATE_HINT}"
    else:
        failure = explain_mismatch(shown, str(result.recalled_data), document)
    return SnapshotResult(failure=failure)


def _migrate(
    path: Path, shown: str, document: SnapshotDocument, legacy: Mapping[int, SnapshotDocument]
) -> tuple[str | None, str | None]:
    """Rewrite an older-scheme snapshot under the current one; (refusal, note)."""
    try:
        stored = SnapshotDocument.from_text(path.read_text(encoding="utf-8"))
    except (OSError, WorkloadDataError):
        return None, None  # the normal check reports it
    if stored.scheme == document.scheme:
        return None, None
    recorded = legacy.get(stored.scheme)
    if recorded is None:
        return (
            f"cannot migrate workload snapshot {shown}: it was written by fingerprint scheme "
            f"{stored.scheme}, which this session cannot compute (known: "
            f"{', '.join(str(v) for v in sorted(legacy)) or 'none'}). Regenerate it with "
            "`pytest --workload-snapshot --snapshot-update` after reviewing the change",
            None,
        )
    if not documents_match(stored, recorded):
        lines = [
            f"refusing to migrate workload snapshot {shown} from scheme {stored.scheme} to "
            f"{document.scheme}: under scheme {stored.scheme} the recorded workloads no longer "
            "match the stored ones, so something changed besides the scheme:"
        ]
        lines += [f"  {line}" for line in render_changes(compare_documents(stored, recorded))]
        lines.append("fix the regression first, or accept it with --snapshot-update")
        return "\n".join(lines), None
    write_text_atomic(path, document.to_text())
    return None, f"migrated {shown} from fingerprint scheme {stored.scheme} to {document.scheme}"


def explain_mismatch(location: str, stored_text: str, document: SnapshotDocument) -> str:
    """The failure message for a stored table that does not match the recorded one."""
    try:
        stored = SnapshotDocument.from_text(stored_text)
    except WorkloadDataError as exc:
        return (
            f"corrupt workload snapshot {location}: {exc}. It is left as it is; fix it or "
            "regenerate it with `pytest --workload-snapshot --snapshot-update`"
        )
    if stored.scheme != document.scheme:
        return (
            f"workload snapshot {location} was written by fingerprint scheme {stored.scheme}; "
            f"this run uses scheme {document.scheme}. Migrate it with `{MIGRATE_COMMAND}`, which "
            f"first checks every stored hash under scheme {stored.scheme}, or regenerate it "
            "with `pytest --workload-snapshot --snapshot-update`"
        )
    lines = [f"workload snapshot mismatch ({location}):"]
    lines += [f"  {line}" for line in render_changes(compare_documents(stored, document))]
    lines.append(UPDATE_HINT)
    return "\n".join(lines)
