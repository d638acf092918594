"""The snapshot gate's verdict on one test's table, named, with what it says
(docs/explanation/snapshot-gate.md; the upgrade ``--workload-accept-upgrade`` accepts:
docs/how-to/library-upgrade.md). No syrupy here: the gate asks :func:`judge` and does what the
verdict names."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Sequence
from functools import cache

from .._compile.health import health_changes, readiness_changes
from .._core.strict_json import Json, canonical_json, sha256_hex
from .._core.text import Commands, one_line, short, versions_line
from .._workload.modules import DESCRIPTION_ONLY, ModuleTable, child_links
from .._workload.workload import TestWorkloads, Workload
from .diff import (
    cost_lines,
    costs_agree,
    identity,
    paths_agree,
    render_changes,
    tables_match,
    unmatched,
    user_keys,
)
from .part_diff import diff_signatures
from .snapshot_files import Stored

#: Description fields an upgrade may change: the wording and what no hash holds (a class's
#: path), never the computation.
REWORDING = DESCRIPTION_ONLY | {"class", "attributes"}


class Verdict(enum.Enum):
    """What the gate does with a test's table."""

    #: No workloads and no file: nothing is asserted.
    NOTHING = "nothing to check"
    #: The stored table stays as it is and passes (syrupy counts it as used).
    MATCHED = "matched"
    #: The stored table stays as it is, also under ``--snapshot-update``, and the test fails.
    REFUSED = "refused"
    #: ``--snapshot-update`` writes the recorded table.
    WRITE = "write"
    #: The write failed (the gate says so after syrupy tried it).
    UNWRITTEN = "not written"
    #: No stored table: the test fails.
    MISSING = "missing"
    #: The stored table differs: the test fails.
    CHANGED = "changed"

    @property
    def fails(self) -> bool:
        """Whether the verdict fails the test (its text says why; any other's is a note)."""
        return self in (Verdict.REFUSED, Verdict.UNWRITTEN, Verdict.MISSING, Verdict.CHANGED)


def judge(
    stored: Stored,
    recorded: TestWorkloads,
    shown: str,
    *,
    updating: bool,
    accept_upgrade: bool,
    judge_signatures: bool,
    tolerance: float,
    commands: Commands,
) -> tuple[Verdict, str | None]:
    """The one verdict on a test's table, and what it says. A narrowed ``--snapshot-update``
    (``accept_upgrade``) allows only its one rewrite (an accepted upgrade); any other change
    fails and leaves the file as it is. Without ``judge_signatures`` (a test recorded only by
    ``--workload-record=all``: its inputs may follow its data), a change in call signatures
    alone is a note, and the stored table is kept as it is, unless ``--snapshot-update``
    rewrites it."""
    if not recorded.workloads and not stored.exists:
        return Verdict.NOTHING, None
    if stored.too_new is not None:
        return (
            Verdict.REFUSED,
            f"workload snapshot {shown} was written by {one_line(stored.too_new)}: upgrade "
            "pytest-workload to check it. It is left as it is, also under --snapshot-update",
        )
    corrupt, fix = stored.corrupt, commands.accept
    if corrupt is not None and not (updating and not accept_upgrade):
        if stored.old:
            return (
                Verdict.REFUSED,
                f"workload snapshot {shown} is of {one_line(corrupt)}; regenerate it with {fix}",
            )
        return (
            Verdict.REFUSED,
            f"corrupt workload snapshot {shown}: {one_line(corrupt)}. It is left as it is; "
            f"fix it or regenerate it with {fix}",
        )
    old = stored.table
    matching = old is not None and tables_match(old, recorded, tolerance)
    if not judge_signatures and old is not None and (accept_upgrade or not updating):
        changes = signature_changes(old, recorded, tolerance)
        if changes:
            return Verdict.MATCHED, (
                "call signature differs from the snapshot's: "
                f"{'; '.join(one_line(c) for c in changes)}; not judged for a test recorded by "
                "--workload-record=all: its inputs may follow the test's data; mark the test to "
                "gate it"
            )
    note = None
    if accept_upgrade and not matching:
        if old is None:
            return Verdict.REFUSED, missing(shown, commands)
        refusal, note = upgrade_verdict(old, shown, recorded, commands)
        if refusal is not None:
            return Verdict.REFUSED, refusal
    elif stored.corrupt is not None:
        what = "" if stored.old else "corrupt "
        note = f"rewrote {what}workload snapshot {shown} ({one_line(stored.corrupt)})"
    shrank = shrunk(old, recorded) if old is not None and matching else []
    # a matching table stays as it is, but under --snapshot-update not one that is
    # unverified, not UTF-8 (both corrupt) or holds costs that shrank: syrupy rewrites it
    if matching and not (updating and (stored.corrupt is not None or shrank)):
        return Verdict.MATCHED, shrunk_note(shown, shrank, updating)
    if updating:
        return Verdict.WRITE, note or shrunk_note(shown, shrank, updating)
    if old is None:
        return Verdict.MISSING, missing(shown, commands)
    changes = render_changes(old, recorded, tolerance)
    return Verdict.CHANGED, explain_mismatch(shown, changes, old, recorded, commands)


def _update_hint(commands: Commands) -> str:
    return f"run {commands.accept} to accept the recorded workloads"


def missing(shown: str, commands: Commands) -> str:
    return f"no workload snapshot {shown} for the recorded workloads; {_update_hint(commands)}"


def shrunk_note(shown: str, lines: Sequence[str], updating: bool) -> str | None:
    """A note on the costs that shrank since the matching stored table was written (under
    ``--snapshot-update``, syrupy rewrote it with them)."""
    if not lines:
        return None
    how = "recorded" if updating else "--snapshot-update records them"
    return f"costs shrank in {shown} ({how}): " + "; ".join(lines)


def upgrade_verdict(
    stored: TestWorkloads, shown: str, document: TestWorkloads, commands: Commands
) -> tuple[str | None, str | None]:
    """Whether a snapshot whose tables differ may be rewritten as a library upgrade's: why
    not, or the note that it was."""
    versions = versions_line(stored.libraries, document.libraries)
    refusals = upgrade_refusals(stored, document)
    if refusals:
        lines = [
            f"refusing to accept workload snapshot {shown} as a library upgrade: more than "
            "configuration text, attributes or class paths changed. It is left as it is:",
            *(f"  {one_line(r)}" for r in refusals),
            *([f"  {one_line(versions)}"] if versions else []),
            f"review the change, then accept it with {commands.accept}",
        ]
        return "\n".join(lines), None
    count = sum(
        o.hash != n.hash for o, n in zip(stored.workloads, document.workloads, strict=False)
    )
    return None, (
        f"accepted a library upgrade in {shown}: {count} workload "
        f"{'hash' if count == 1 else 'hashes'} rewritten; parameters, children, inputs, FLOPs "
        f"and computations unchanged" + (f" ({one_line(versions)})" if versions else "")
    )


def explain_mismatch(
    shown: str,
    changes: Sequence[str],
    stored: TestWorkloads,
    recorded: TestWorkloads,
    commands: Commands,
) -> str:
    """The failure message for a stored table that does not match the recorded one: the
    library versions that moved, then each of the ``changes`` (asked of :mod:`.diff` first,
    so that the path goes there once)."""
    versions = versions_line(stored.libraries, recorded.libraries)
    lines = [f"workload snapshot mismatch ({shown}):"]
    lines += [f"  {one_line(versions)}"] if versions else []
    lines += [f"  {c}" for c in changes]
    if not upgrade_refusals(stored, recorded):
        lines.append(
            "only configuration text, attributes or class paths changed (parameters, "
            "children, inputs, FLOPs and computations did not): accept it with "
            f"{commands.accept_upgrade}"
        )
    lines.append(_update_hint(commands))
    return "\n".join(lines)


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
    old: Workload, new: Workload, skeletons: tuple[str | None, str | None]
) -> Iterator[str]:
    if old.input_signature != new.input_signature:
        yield f"input {old.input} -> {new.input}"
    if skeletons[0] is None or skeletons[1] is None:
        yield "no stored module description to compare its parameters and children with"
    elif skeletons[0] != skeletons[1]:
        yield "parameters, buffers, children or train/eval mode changed"
    if old.params.bytes != new.params.bytes:
        yield f"parameter bytes {old.params.bytes} -> {new.params.bytes}"
    if old.flops != new.flops:
        yield f"FLOPs {old.flops} -> {new.flops}"
    if old.compute_hash != new.compute_hash:
        hashes = [short(h) if h else "unknown" for h in (old.compute_hash, new.compute_hash)]
        yield f"computation changed (compute hash {hashes[0]} -> {hashes[1]})"
    if user_keys(old) != user_keys(new):
        yield "user key changed"
    if not paths_agree(old, new):
        yield f"paths {old.label} -> {new.label}"
    if any(grew for grew, _ in health_changes(old.compile_health, new.compile_health)):
        yield "new graph breaks, recompiles or frames run eagerly"
    if any(grew for grew, _ in readiness_changes(old.compile_readiness, new.compile_readiness)):
        yield "new graph breaks, recompiles or frames run eagerly in its compile readiness"


def upgrade_refusals(stored: TestWorkloads, recorded: TestWorkloads) -> list[str]:
    """Why the recorded table is more than an upgrade of the stored one (empty: it is not).
    Tables of as many workloads are paired in order: an upgrade changes hashes, never which
    calls ran."""
    if len(stored.workloads) != len(recorded.workloads):
        return [f"{len(stored.workloads)} workloads stored, {len(recorded.workloads)} recorded"]
    before, after = _skeletons(stored.modules), _skeletons(recorded.modules)
    refusals = []
    for old, new in zip(stored.workloads, recorded.workloads, strict=True):
        if (old.name, old.depth) != (new.name, new.depth):
            refusals.append(f"stored workload {old.label} is not the recorded {new.label}")
            continue
        skeletons = (before(old.structure_hash), after(new.structure_hash))
        refusals += [
            f"{new.label} ({new.class_name}): {what}"
            for what in _entry_refusal(old, new, skeletons)
        ]
    return refusals


def signature_changes(
    old: TestWorkloads, new: TestWorkloads, tolerance: float = 0.0
) -> list[str] | None:
    """What the call signatures changed, where the tables differ only in that (each one-sided
    workload has its structure on the other side, at its depth, under another signature): one
    line per change; empty where the tables match; None where they differ in anything else."""
    one_sided_old = unmatched(old.workloads, new.workloads, tolerance)
    one_sided_new = unmatched(new.workloads, old.workloads, tolerance, recorded=True)
    lines: dict[str, None] = {}
    for entry, other, other_one_sided in (
        *((e, new, one_sided_new) for e in one_sided_old),
        *((e, old, one_sided_old) for e in one_sided_new),
    ):
        if identity(entry) in {identity(o) for o in other.workloads}:
            return None
        # the counterpart of the same structure that differs least; a one-sided one first
        counterparts = sorted(
            (
                o
                for o in other.workloads
                if o.structure_hash == entry.structure_hash
                and o.depth == entry.depth
                and o.input_signature != entry.input_signature
            ),
            key=lambda o: (o not in other_one_sided, o.name != entry.name),
        )
        pairs = ((entry, o) if other is new else (o, entry) for o in counterparts)
        diffs = min(
            (diff_signatures(a.input_signature, b.input_signature, b.arg_names) for a, b in pairs),
            key=len,
            default=None,
        )
        if diffs is None:
            return None
        lines.update(dict.fromkeys(f"{entry.label} ({entry.class_name}): {d}" for d in diffs))
    return list(lines)


def shrunk(old: TestWorkloads, new: TestWorkloads) -> list[str]:
    """Per recorded workload of matching tables (each has its stored one), the costs, graph
    breaks or recompiles that shrank (a note: the gate passes it)."""
    stored = {(e.parent, e.hash, e.depth): e for e in old.workloads}
    lines = []
    for entry in new.workloads:
        before = stored[(entry.parent, entry.hash, entry.depth)]
        moved = []
        if costs_agree(before, entry, 0.0) and before.costs != entry.costs:
            moved += [line for line in cost_lines(before, entry) if " -> " in line]
        for changes in (
            health_changes(before.compile_health, entry.compile_health),
            readiness_changes(before.compile_readiness, entry.compile_readiness),
        ):
            moved += [] if any(grew for grew, _ in changes) else [line for _, line in changes]
        lines += [f"{entry.label}: {'; '.join(moved)}"] if moved else []
    return lines
