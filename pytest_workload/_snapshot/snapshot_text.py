"""What the snapshot gate says: the failure texts of a changed table, and the rewrite
``--snapshot-update`` narrows to, checked first: an accepted library upgrade
(``--workload-accept-upgrade``), which may reword a module's attributes or class path but
nothing the computation depends on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from .._compile import health_agrees, readiness_agrees
from .._core.strict_json import Json, canonical_json, sha256_hex
from .._core.text import _INDENT, Commands, one_line, prefix_length, short, versions_line
from .._workload.modules import ModuleTable, child_links
from .diff import Change, compare_documents, paths_agree
from .document import SnapshotDocument, SnapshotEntry

#: Submodule changes listed per message before the rest are summarised in a count.
MAX_SUBMODULE_CHANGES = 8
#: Description fields an upgrade may change: the wording, never the computation.
REWORDING = frozenset({"class", "attributes"})
#: What a verdict says: why the rewrite is refused, or the note that it was made.
Verdict = tuple[str | None, str | None]


def _change_lines(change: Change, hash_len: int) -> list[str]:
    e = change.entry
    title = one_line(f"{e.label} ({e.class_name})")
    if change.kind == "changed":
        assert change.old is not None and change.new is not None
        hashes = f"{short(change.old.hash, hash_len)} -> {short(change.new.hash, hash_len)}"
        head = f"changed:  {title} {hashes}"
    else:
        shape = one_line(e.input_signature.format())
        head = f"{change.kind + ':':<9} {title} {short(e.hash, hash_len)}, input {shape}"
    return [head, *(f"{_INDENT}{one_line(d)}" for d in change.details)]


def render_changes(changes: Sequence[Change]) -> list[str]:
    """Root changes in full; submodule changes after them, the first few in full."""
    hash_len = prefix_length(e.hash for c in changes for e in (c.old, c.new) if e)
    subs = [c for c in changes if c.entry.depth > 0]
    shown = [c for c in changes if c.entry.depth == 0] + subs[:MAX_SUBMODULE_CHANGES]
    lines = [line for c in shown for line in _change_lines(c, hash_len)]
    if len(subs) > MAX_SUBMODULE_CHANGES:
        lines.append(
            f"... and {len(subs) - MAX_SUBMODULE_CHANGES} more submodule workloads changed "
            "(--workload-json has them all)"
        )
    return lines


def signature_note(changes: Sequence[str]) -> str:
    """The note for a table of a test recorded by ``--workload-record=all`` that differs from
    the stored one in call signatures only."""
    return (
        f"call signature differs from the snapshot's: {'; '.join(one_line(c) for c in changes)}; "
        "not judged for a test recorded by --workload-record=all: its inputs may follow the "
        "test's data; mark the test to gate it"
    )


def _update_hint(commands: Commands) -> str:
    return f"run {commands.accept} to accept the recorded workloads"


def missing(shown: str, commands: Commands) -> str:
    return f"no workload snapshot {shown} for the recorded workloads; {_update_hint(commands)}"


def explain_mismatch(
    location: str,
    stored: SnapshotDocument,
    document: SnapshotDocument,
    commands: Commands,
    tolerance: float,
) -> str:
    """The failure message for a stored table that does not match the recorded one."""
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
    lines.append(_update_hint(commands))
    return "\n".join(lines)


def shrunk_note(shown: str, lines: Sequence[str], updating: bool) -> str | None:
    """A note on the costs that shrank since the matching stored table was written (under
    ``--snapshot-update``, syrupy rewrote it with them)."""
    if not lines:
        return None
    how = "recorded" if updating else "--snapshot-update records them"
    return f"costs shrank in {shown} ({how}): " + "; ".join(lines)


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
    count = sum(o.hash != n.hash for o, n in zip(stored.entries, document.entries, strict=False))
    return None, (
        f"accepted a library upgrade in {shown}: {count} workload "
        f"{'hash' if count == 1 else 'hashes'} rewritten; parameters, children, inputs, FLOPs "
        f"and computations unchanged" + (f" ({one_line(versions)})" if versions else "")
    )


def _skeletons(table: ModuleTable) -> Callable[[str], str | None]:
    """A hash of a tree without its rewordable fields; None where a description is missing."""

    @cache
    def skeleton(key: str) -> str | None:
        description = table.get(key)
        if description is None:
            return None
        links = [(name, skeleton(child)) for name, child in child_links(description)]
        if any(inner is None for _, inner in links):
            return None
        kept: dict[str, Json] = {
            k: v for k, v in description.items() if k not in REWORDING and k != "children"
        }
        kept["children"] = [[name, inner] for name, inner in links]
        return sha256_hex(canonical_json(kept))

    return skeleton


def _entry_refusal(
    old: SnapshotEntry, new: SnapshotEntry, skeletons: tuple[str | None, str | None]
) -> list[str]:
    what = []
    if old.input_signature != new.input_signature:
        what.append(f"input {old.input_signature.format()} -> {new.input_signature.format()}")
    if skeletons[0] is None or skeletons[1] is None:
        what.append("no stored module description to compare its parameters and children with")
    elif skeletons[0] != skeletons[1]:
        what.append("parameters, buffers, children or train/eval mode changed")
    if old.param_bytes != new.param_bytes:
        what.append(f"parameter bytes {old.param_bytes} -> {new.param_bytes}")
    if old.flops != new.flops:
        what.append(f"FLOPs {old.flops} -> {new.flops}")
    if old.compute_hash != new.compute_hash:
        hashes = [short(h) if h else "unknown" for h in (old.compute_hash, new.compute_hash)]
        what.append(f"computation changed (compute hash {hashes[0]} -> {hashes[1]})")
    if canonical_json(old.user_key) != canonical_json(new.user_key):
        what.append("user key changed")
    if not paths_agree(old, new):
        what.append(f"paths {old.label} -> {new.label}")
    if not health_agrees(old.compile_health, new.compile_health):
        what.append("new graph breaks, recompiles or frames run eagerly")
    if not readiness_agrees(old.compile_readiness, new.compile_readiness):
        what.append("new graph breaks, recompiles or frames run eagerly in its compile readiness")
    return [f"{new.label} ({new.class_name}): {w}" for w in what]


def upgrade_refusals(stored: SnapshotDocument, recorded: SnapshotDocument) -> list[str]:
    """Why the recorded table is more than an upgrade of the stored one (empty: it is not).

    Workloads are paired in order: an upgrade changes hashes, never which calls ran."""
    if len(stored.entries) != len(recorded.entries):
        return [f"{len(stored.entries)} workloads stored, {len(recorded.entries)} recorded"]
    before, after = _skeletons(stored.modules), _skeletons(recorded.modules)
    refusals: list[str] = []
    for old, new in zip(stored.entries, recorded.entries, strict=True):
        if (old.name, old.depth) != (new.name, new.depth):
            refusals.append(f"stored workload {old.label} is not the recorded {new.label}")
            continue
        skeletons = (before(old.structure_hash), after(new.structure_hash))
        refusals.extend(_entry_refusal(old, new, skeletons))
    return refusals
