"""Rewrites of a stored snapshot that the gate makes without ``--snapshot-update``: a
migration to the current fingerprint scheme and an accepted library upgrade. Each checks
first that nothing else changed, and otherwise leaves the file as it is and says why."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .._core.commands import Commands
from .._core.errors import CorruptFileError, FileWriteError, WorkloadDataError
from .._core.files import read_text, write_text_atomic
from .._core.library_versions import versions_line
from .._core.text import one_line
from .diff import compare_documents, documents_match
from .document import SnapshotDocument
from .snapshot_text import render_changes
from .upgrade import changed_count, upgrade_refusals


def rewrite_migrated(
    path: Path,
    shown: str,
    document: SnapshotDocument,
    legacy: Mapping[int, SnapshotDocument],
    commands: Commands,
) -> tuple[str | None, str | None]:
    """Rewrite an older-scheme snapshot under the current one; (refusal, note)."""
    try:
        stored = SnapshotDocument.from_text(read_text(path))
    except (CorruptFileError, WorkloadDataError):
        return None, None  # the normal check reports it
    if stored.scheme == document.scheme:
        return None, None
    recorded = legacy.get(stored.scheme)
    if recorded is None:
        return (
            f"cannot migrate workload snapshot {shown}: it was written by fingerprint scheme "
            f"{stored.scheme}, which this session cannot compute (known: "
            f"{', '.join(str(v) for v in sorted(legacy)) or 'none'}). Regenerate it with "
            f"{commands.accept} after reviewing the change",
            None,
        )
    if not documents_match(stored, recorded):
        lines = [
            f"refusing to migrate workload snapshot {shown} from scheme {stored.scheme} to "
            f"{document.scheme}: under scheme {stored.scheme} the recorded workloads no longer "
            "match the stored ones, so something changed besides the scheme:"
        ]
        lines += [f"  {line}" for line in render_changes(compare_documents(stored, recorded))]
        lines.append(f"fix the regression first, or accept it with {commands.accept}")
        return "\n".join(lines), None
    write_text_atomic(path, document.to_text())
    return None, f"migrated {shown} from fingerprint scheme {stored.scheme} to {document.scheme}"


def rewrite_upgraded(
    path: Path, shown: str, document: SnapshotDocument, commands: Commands
) -> tuple[str | None, str | None]:
    """Rewrite a snapshot whose change is only an upgrade's; (refusal, note)."""
    try:
        stored = SnapshotDocument.from_text(read_text(path))
    except (CorruptFileError, WorkloadDataError):
        return None, None  # the normal check reports it
    if stored.scheme != document.scheme or documents_match(stored, document):
        return None, None
    versions = versions_line(stored.libraries, document.libraries)
    refusals = upgrade_refusals(stored, document)
    if refusals:
        lines = [
            f"refusing to accept workload snapshot {shown} as a library upgrade: more than "
            "configuration text, attributes or class paths changed. It is left as it is:"
        ]
        lines += [f"  {one_line(r)}" for r in refusals]
        lines += [f"  {one_line(versions)}"] if versions else []
        lines.append(f"review the change, then accept it with {commands.accept}")
        return "\n".join(lines), None
    try:
        write_text_atomic(path, document.to_text())
    except FileWriteError as exc:
        return f"workload snapshot {shown} could not be written: {one_line(exc.reason)}", None
    count = changed_count(stored, document)
    return None, (
        f"accepted a library upgrade in {shown}: {count} workload "
        f"{'hash' if count == 1 else 'hashes'} rewritten; parameters, children, inputs, FLOPs "
        f"and computations unchanged" + (f" ({one_line(versions)})" if versions else "")
    )
