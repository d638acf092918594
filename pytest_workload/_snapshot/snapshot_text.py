"""The failure texts of snapshot changes: what changed per workload, and how to accept it."""

from __future__ import annotations

from collections.abc import Sequence

from .._core.text import _INDENT, Commands, one_line, prefix_length, short
from .diff import Change


def _entry_title(change: Change) -> str:
    e = change.entry
    return one_line(f"{e.label} ({e.class_name})")


#: Submodule changes listed per message before the rest are summarised in a count.
MAX_SUBMODULE_CHANGES = 8


def _change_lines(change: Change, hash_len: int) -> list[str]:
    if change.kind == "changed":
        assert change.old is not None and change.new is not None
        head = (
            f"changed:  {_entry_title(change)} {short(change.old.hash, hash_len)} -> "
            f"{short(change.new.hash, hash_len)}"
        )
        return [head, *(f"{_INDENT}{one_line(d)}" for d in change.details)]
    e = change.entry
    return [
        f"{change.kind + ':':<9} {_entry_title(change)} {short(e.hash, hash_len)}, input "
        f"{one_line(e.input_signature.format())}",
        *(f"{_INDENT}{one_line(d)}" for d in change.details),
    ]


def render_changes(changes: Sequence[Change]) -> list[str]:
    """Root changes in full; submodule changes after them, the first few in full."""
    hash_len = prefix_length(h for c in changes for e in (c.old, c.new) if e for h in (e.hash,))
    roots = [c for c in changes if c.entry.depth == 0]
    subs = [c for c in changes if c.entry.depth > 0]
    lines = [line for c in roots for line in _change_lines(c, hash_len)]
    lines += [line for c in subs[:MAX_SUBMODULE_CHANGES] for line in _change_lines(c, hash_len)]
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


def update_hint(commands: Commands) -> str:
    return f"run {commands.accept} to accept the recorded workloads"


def shrunk_note(shown: str, lines: Sequence[str], updating: bool) -> str | None:
    """A note on the costs that shrank since the matching stored table was written (under
    ``--snapshot-update``, syrupy rewrote it with them)."""
    if not lines:
        return None
    how = "recorded" if updating else "--snapshot-update records them"
    return f"costs shrank in {shown} ({how}): " + "; ".join(lines)
