"""The two rewrites of a stored snapshot that ``--snapshot-update`` narrows to: a migration to
the current fingerprint scheme (``--workload-migrate``) and an accepted library upgrade
(``--workload-accept-upgrade``). Each checks first that nothing else changed and says why not
otherwise; nothing here writes: syrupy does, when the gate lets it."""

from __future__ import annotations

from collections.abc import Mapping

from .._core.text import Commands, one_line, versions_line
from .diff import compare_documents, documents_match
from .document import SnapshotDocument
from .snapshot_text import render_changes
from .upgrade import changed_count, upgrade_refusals

#: What a verdict says: why the rewrite is refused, or the note that it was made.
Verdict = tuple[str | None, str | None]


def migration_verdict(
    stored: SnapshotDocument,
    shown: str,
    document: SnapshotDocument,
    legacy: Mapping[int, SnapshotDocument],
    commands: Commands,
) -> Verdict:
    """Whether an older-scheme snapshot may be rewritten under the current scheme: only if
    its stored hashes still match under the scheme that wrote it."""
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
    return None, f"migrated {shown} from fingerprint scheme {stored.scheme} to {document.scheme}"


def upgrade_verdict(
    stored: SnapshotDocument, shown: str, document: SnapshotDocument, commands: Commands
) -> Verdict:
    """Whether a snapshot whose tables differ may be rewritten as a library upgrade's."""
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
    count = changed_count(stored, document)
    return None, (
        f"accepted a library upgrade in {shown}: {count} workload "
        f"{'hash' if count == 1 else 'hashes'} rewritten; parameters, children, inputs, FLOPs "
        f"and computations unchanged" + (f" ({one_line(versions)})" if versions else "")
    )
