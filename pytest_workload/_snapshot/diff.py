"""Two workload tables side by side: the one place that decides whether a stored table and a
recorded one match (the snapshot gate and ``compare`` both ask it), pairs their entries and
words each change, the distance asked only where two workloads share a structure."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Hashable, Iterator

from .._compile.health import CompileHealth, Readiness, health_changes, readiness_changes
from .._core.strict_json import Json, canonical_json
from .._core.text import INDENT, one_line, prefix_length, short
from .._fingerprint.distance import distance_factor, nearest
from .._workload.costs import BY_RANK
from .._workload.workload import TestWorkloads, Workload
from .part_diff import (
    changed_submodules,
    diff_operations,
    diff_signatures,
    field_changes,
    grouped_lines,
    op_name,
    param_dtype_change,
)

SCALED = "same structure at a scaled shape:"
#: Operation-level differences listed per workload before the rest are counted.
MAX_OP_LINES = 8
#: Submodule changes listed per message before the rest are summarised in a count.
MAX_SUBMODULE_CHANGES = 8


def format_key(key: Json) -> str:
    """A user key as compact JSON, the way messages show it."""
    return json.dumps(key, ensure_ascii=False, separators=(",", ":"))


def user_keys(e: Workload) -> str:
    """The keys the user's hook gave a workload, as canonical JSON (a key 1 is not True)."""
    return canonical_json([k.key for k in e.user_keys])


def identity(e: Workload) -> tuple[str | None, str, int, str, int]:
    """What must be equal for the snapshot to pass: the workload under its caller, the user's
    own keys for it, and its parameter bytes. FLOPs are left out: they may be unknown (a
    replay that failed), so they are compared apart."""
    return (e.parent, e.hash, e.depth, user_keys(e), e.params.bytes)


def tables_match(old: TestWorkloads, new: TestWorkloads, tolerance: float = 0.0) -> bool:
    """The same workloads under the same callers (order does not matter), whose costs grew
    by no more than ``tolerance``: folded tables of one scheme (the reader refuses another)."""
    same_count = len(old.workloads) == len(new.workloads)
    return same_count and not unmatched(old.workloads, new.workloads, tolerance)


def paths_agree(a: Workload, b: Workload) -> bool:
    """The same paths ran a submodule workload (a layer more or fewer of the same kind is a
    change). A root's one path is its call site's name, which renaming a variable changes:
    not compared."""
    return a.depth == 0 or a.patterns == b.patterns


def computes_agree(a: Workload, b: Workload) -> bool:
    """Equal compute hashes. Whether a workload has one (a compiled or scripted module has
    none) and whether its operations follow its data are the code's, not the run's: either
    changing is a change (so an entry edited to leave its hash out, or marked data-dependent,
    fails rather than turning the check off). Where both follow the data, the hashes cover
    what ran up to the first read of values, and the gate does not flap with them."""
    if a.compute_hash is None or b.compute_hash is None or a.data_dependent != b.data_dependent:
        return a.compute_hash is b.compute_hash is None and a.data_dependent == b.data_dependent
    return a.data_dependent or a.compute_hash == b.compute_hash


def costs_agree(old: Workload, new: Workload, tolerance: float) -> bool:
    """No cost of the recorded ``new`` grew beyond ``tolerance`` over the stored ``old``. Costs
    are counted, not timed: any growth is the code's. Like compute hashes, none on either side
    agrees with any, and a data-dependent workload's follow the data."""
    a, b = old.costs, new.costs
    if old.data_dependent or new.data_dependent or a is None or b is None:
        return True
    return not any(m.grew(a[m.field], b[m.field], tolerance) for m in BY_RANK)


def _pair_score(old: Workload, new: Workload) -> int:
    """How likely ``new`` is ``old`` changed; 0 means unrelated."""
    if old.depth != new.depth:
        return 0
    same = (
        old.name == new.name,
        old.structure_hash == new.structure_hash,
        old.input_signature == new.input_signature,
        old.class_name == new.class_name,
    )
    name, structure, signature, cls = same
    related = name or structure or (cls and signature)
    return sum(w for w, s in zip((8, 4, 2, 1), same, strict=True) if s) if related else 0


def _agree(old: Workload, new: Workload, tolerance: float) -> bool:
    """Everything but the identity agrees: FLOPs, computations, paths, costs, compile
    health and readiness."""
    # (a FLOP count on one side only differs: an unknown count is no evidence of no change)
    return (
        old.flops == new.flops
        and computes_agree(old, new)
        and paths_agree(old, new)
        and costs_agree(old, new, tolerance)
        and not any(grew for grew, _ in compile_changes(old, new))
    )


def compile_changes(old: Workload | None, new: Workload) -> list[tuple[bool, str]]:
    """What moved in compile health, then in compile readiness, each with whether it grew;
    without ``old``, what a new workload's checks found against a clean compile."""
    ready = new.compile_readiness
    if old is not None:
        health, was = old.compile_health, old.compile_readiness
    else:
        health, was = CompileHealth(), ready and Readiness(ready.backend, CompileHealth())
    return health_changes(health, new.compile_health) + readiness_changes(was, ready)


def unmatched(
    entries: tuple[Workload, ...],
    others: tuple[Workload, ...],
    tolerance: float,
    *,
    recorded: bool = False,
) -> list[Workload]:
    """Entries with no counterpart in ``others`` (each used once): the same identity, and
    the rest agreeing (``recorded``: ``entries`` are the recorded ones, ``others`` stored)."""
    pool: defaultdict[Hashable, list[Workload]] = defaultdict(list)
    for other in others:
        pool[identity(other)].append(other)
    unmatched = []
    for entry in entries:
        candidates = pool[identity(entry)]
        pairs = ((o, (o, entry) if recorded else (entry, o)) for o in candidates)
        fit = next((o for o, pair in pairs if _agree(*pair, tolerance)), None)
        if fit is None:
            unmatched.append(entry)
        else:
            candidates.remove(fit)
    return unmatched


def compare_tables(
    old: TestWorkloads, new: TestWorkloads, tolerance: float = 0.0
) -> list[tuple[Workload | None, Workload | None]]:
    """What differs, paired up: a stored and a recorded workload, None on the side that has
    none (the recorded one appeared, the stored one vanished). An unchanged workload under a
    changed caller is not a change of its own (its caller's change explains it)."""
    unmatched_old = unmatched(old.workloads, new.workloads, tolerance)
    pairs: list[tuple[Workload | None, Workload | None]] = []
    for entry in unmatched(new.workloads, old.workloads, tolerance, recorded=True):
        best = max(unmatched_old, key=lambda o: _pair_score(o, entry), default=None)
        if best is None or _pair_score(best, entry) == 0:
            pairs.append((None, entry))
            continue
        unmatched_old.remove(best)
        more_than_the_caller = identity(best)[1:] != identity(entry)[1:]
        if more_than_the_caller or not _agree(best, entry, tolerance):
            pairs.append((best, entry))
    return pairs + [(entry, None) for entry in unmatched_old]


def named(old: Workload | None, new: Workload | None) -> Workload:
    """The workload a change is named by: the recorded one, or the stored one that vanished."""
    entry = new or old
    assert entry is not None
    return entry


def explain(
    old: Workload | None, new: Workload | None, old_table: TestWorkloads, new_table: TestWorkloads
) -> list[str]:
    """Say in words how a pair from :func:`compare_tables` differs (a vanished workload needs
    no more words)."""
    if new is None:
        return []
    if old is None:
        # (its breaks and recompiles say what dynamo made of it: a guard that failed)
        return [*_nearest_stored(new, old_table), *(line for _, line in compile_changes(None, new))]
    lines: list[str] = []
    if user_keys(old) != user_keys(new):
        was, now = (", ".join(format_key(k.key) for k in e.user_keys) for e in (old, new))
        lines.append(f"user key changed: {was or 'null'} -> {now or 'null'}")
    if (relation := scaling(old, new)) is not None:
        lines.append(relation)
    if old.class_name != new.class_name:
        lines.append(f"class {old.class_name} -> {new.class_name}")
    if old.structure_hash != new.structure_hash:
        lines.extend(_structure_lines(old, new, old_table, new_table))
    lines.extend(diff_signatures(old.input_signature, new.input_signature, new.arg_names))
    if old.flops != new.flops:
        lines.append(f"FLOPs {_count(old.flops)} -> {_count(new.flops)}")
    if old.params.bytes != new.params.bytes:
        lines.append(f"parameter bytes {_count(old.params.bytes)} -> {_count(new.params.bytes)}")
    if not paths_agree(old, new):
        lines.append(f"paths {old.label} -> {new.label}")
    if not computes_agree(old, new):
        lines.extend(compute_lines(old, new))
    if old.hash == new.hash:  # (another structure or input has other costs: not news)
        lines.extend(cost_lines(old, new))
    lines.extend(line for _, line in compile_changes(old, new))
    if not lines:
        lines.append("same structure and inputs under another fingerprint")
    return lines


def scaling(old: Workload, new: Workload) -> str | None:
    """The shape relation of two workloads of one structure, when one divides the other
    (asked of the distance only then: other structures or the same inputs have none)."""
    if old.structure_hash != new.structure_hash or old.input_signature == new.input_signature:
        return None
    up = distance_factor(new.key, old.key)
    if math.isfinite(up) and up > 1:
        return f"{SCALED} {up:g}x the stored workload (distance factor {up:g})"
    down = distance_factor(old.key, new.key)
    if math.isfinite(down) and down > 1:
        return (
            f"{SCALED} 1/{down:g} of the stored workload (distance factor {down:g} the other way)"
        )
    return None


def _nearest_stored(entry: Workload, old: TestWorkloads) -> list[str]:
    """Name the stored workload an appeared one is a scaled version of, if there is one."""
    stored = {canonical_json(e.key): e for e in old.workloads}
    found = nearest(entry.key, [e.key for e in old.workloads])
    if found is not None:
        e, how = stored[canonical_json(found[0])], f" at distance factor {found[1]:g}"
    else:
        reverse = [(distance_factor(e.key, entry.key), k) for k, e in stored.items()]
        smaller = min((r for r in reverse if math.isfinite(r[0])), default=None)
        if smaller is None:
            return []
        e, how = stored[smaller[1]], f", {smaller[0]:g}x this one (distance factor)"
    return [f"nearest stored workload: {e.label} {e.input}{how}"]


def compute_lines(old: Workload, new: Workload) -> list[str]:
    """``computation changed (...)`` and the operations that differ, by submodule path. Where
    the structure or inputs changed too (another hash), that change explains operations that
    only see other shapes: only other operations are shown, and nothing when there are none."""
    was, now = (short(h) if h else "none recorded" for h in (old.compute_hash, new.compute_hash))
    head = f"computation changed (compute hash {was} -> {now})"
    if old.compute_hash is None or new.compute_hash is None:
        return [head]
    if old.data_dependent != new.data_dependent:
        was, now = (
            "follow" if d else "do not follow" for d in (old.data_dependent, new.data_dependent)
        )
        return [f"computation changed: its operations {was} the data -> {now}"]
    a, b = old.computation, new.computation
    names_only = old.hash != new.hash
    if a is None or b is None:
        return [] if names_only else [f"{head}; the operations are not stored on both sides"]
    if names_only and [op_name(op) for op in a.flat] == [op_name(op) for op in b.flat]:
        return []
    lines: list[str] = []
    # (a submodule's calls are named from it; a root's, from the root)
    base = old.label if old.depth else ""
    diff_operations(a, b, old.label, lines, names_only=names_only, base=base)
    if len(lines) > MAX_OP_LINES:
        lines = [*lines[:MAX_OP_LINES], f"... and {len(lines) - MAX_OP_LINES} more differences"]
    return [head, *lines]


def cost_lines(old: Workload, new: Workload) -> Iterator[str]:
    """One line per cost that moved (``peak memory 1.0 MiB -> 9.0 MiB (+8.0 MiB, 9.00x)``),
    then the operation counts that changed."""
    a, b = old.costs, new.costs
    if old.data_dependent or new.data_dependent or a is None or b is None:
        return
    for metric in BY_RANK:
        line = metric.moved(a[metric.field], b[metric.field])
        if line is not None:
            yield line
    counts, now = dict(a.ops), dict(b.ops)
    moved = [
        f"{now.get(name, 0) - counts.get(name, 0):+d} {name}"
        for name in sorted(counts.keys() | now.keys())
        if counts.get(name, 0) != now.get(name, 0)
    ]
    if moved:
        yield "operations " + ", ".join(moved)
    if a.partial or b.partial:
        whole = ", ".join(m.label for m in BY_RANK if m.whole_call)
        but = f" (but {whole})" if whole else ""
        yield f"costs{but} are over the operations before the first that follows the data"


def _structure_lines(
    old: Workload, new: Workload, old_table: TestWorkloads, new_table: TestWorkloads
) -> list[str]:
    """A structure change, or a dtype change where the entries show it is nothing else."""
    dtypes = param_dtype_change(old, new)
    without = old.structure_hash_without_dtypes
    if without is not None and without == new.structure_hash_without_dtypes:
        return [f"{dtypes or 'parameter or buffer dtypes changed'} (structure otherwise the same)"]
    hashes = f"{short(old.structure_hash)} -> {short(new.structure_hash)}"
    lines = [f"structure changed (structure hash {hashes})"]
    path = new.name if new.depth else ""
    fields = field_changes(
        old_table.modules, new_table.modules, old.structure_hash, new.structure_hash, path
    )
    if fields:
        lines.extend(grouped_lines(fields, new.name))
        return lines
    paths = changed_submodules(old, new, old_table, new_table)
    if paths:
        lines.append("submodules whose structure changed: " + ", ".join(paths))
    return lines + ([dtypes] if dtypes else [])


def _count(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _change_lines(
    old: Workload | None, new: Workload | None, tables: tuple[TestWorkloads, ...], hash_len: int
) -> list[str]:
    details = [f"{INDENT}{one_line(d)}" for d in explain(old, new, *tables)]
    e = named(old, new)
    title = one_line(f"{e.label} ({e.class_name})")
    if old is not None and new is not None:
        head = f"changed:  {title} {short(old.hash, hash_len)} -> {short(new.hash, hash_len)}"
    else:
        shape = one_line(e.input)
        kind = "appeared" if old is None else "vanished"
        head = f"{kind}: {title} {short(e.hash, hash_len)}, input {shape}"
    return [head, *details]


def render_changes(old: TestWorkloads, new: TestWorkloads, tolerance: float) -> list[str]:
    """What differs: root changes in full; submodule changes after them, the first few in
    full."""
    pairs = compare_tables(old, new, tolerance)
    hash_len = prefix_length(e.hash for pair in pairs for e in pair if e)
    subs = [p for p in pairs if named(*p).depth > 0]
    shown = [p for p in pairs if named(*p).depth == 0] + subs[:MAX_SUBMODULE_CHANGES]
    lines = [line for p in shown for line in _change_lines(*p, (old, new), hash_len)]
    if len(subs) > MAX_SUBMODULE_CHANGES:
        lines.append(
            f"... and {len(subs) - MAX_SUBMODULE_CHANGES} more submodule workloads changed "
            "(--workload-json has them all)"
        )
    return lines
