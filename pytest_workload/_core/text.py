"""Text for people: escaping, durations, short hashes, library versions, and the commands that
hints give. What users name is escaped for each output where it is rendered, and stays raw in
files and JSON (docs/explanation/guarantees.md, "Output")."""

from __future__ import annotations

import html
import shlex
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

#: What Markdown gives a meaning inside a line (GitHub's ``$`` maths included); what it gives a
#: meaning at a line's start cannot arise, since no escaped text contains a line break.
_MARKDOWN_PUNCTUATION: Final = frozenset("\\`*_{}[]()#!|~$^")


def one_line(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def terminal_text(text: str) -> str:
    """Each user-chosen part of it must already be ``one_line``: a line break inside a name
    would otherwise forge a line."""
    return "\n".join(one_line(line) for line in text.split("\n"))


def _markdown_char(c: str) -> str:
    if c in _MARKDOWN_PUNCTUATION:
        return "\\" + c
    if c in "&<>":
        return html.escape(c)
    if unicodedata.category(c)[0] in "CZ" and c != " ":
        return repr(c)[1:-1].replace("\\", "\\\\")  # line breaks included: shown, not obeyed
    return c


def markdown_text(text: str) -> str:
    """``text`` as literal Markdown (also in a table cell)."""
    return "".join(_markdown_char(c) for c in text)


def markdown_code(text: str) -> str:
    """Not a backtick span, which a backtick in the text would end."""
    return f"<code>{markdown_text(text)}</code>"


def html_pre(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"


INDENT = "    "


def format_duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def plural(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


#: Characters of a hash shown in reports and messages; storage always keeps the full hash.
SHORT_HASH_LENGTH: Final = 8


def prefix_length(hashes: Iterable[str]) -> int:
    """The shortest prefix that tells ``hashes`` apart, ``SHORT_HASH_LENGTH`` at least."""
    distinct, length = set(hashes), SHORT_HASH_LENGTH
    while len({h[:length] for h in distinct}) < len(distinct):
        length += 1
    return length


def short(full: str, length: int = SHORT_HASH_LENGTH) -> str:
    return full[:length]


def format_versions(versions: Mapping[str, str]) -> str:
    """``torch 2.11.0, timm 1.0.20``: torch first, then the others by name."""
    names = sorted(versions, key=lambda n: (n != "torch", n))
    return ", ".join(f"{n} {versions[n]}" for n in names) or "unknown versions"


def versions_line(before: Mapping[str, str], after: Mapping[str, str]) -> str | None:
    if not before or dict(before) == dict(after):
        return None
    return f"written with {format_versions(before)}; this run: {format_versions(after)}"


@dataclass(frozen=True)
class Commands:
    """The commands hints give, each repeating what this run's command line chose
    (docs/reference/options.md, "Hints repeat your options")."""

    #: The words of this run's command line that select tests (``-k``, ``-m``, ``-o``) or what
    #: they record (``--workload-record=all``), as given.
    selecting: tuple[str, ...] = ()
    #: The paths and node ids given on this run's command line, as given.
    paths: tuple[str, ...] = ()

    def command(self, *flags: str, one_process: bool = False) -> str:
        """Quoted for the terminal; ``one_process``: for a command that writes timing
        baselines, which xdist workers sharing the cores do not write."""
        words = ["pytest", *self.paths, "--workload-snapshot", *flags, *self.selecting]
        words += ["-p", "no:xdist"] if one_process else []
        return f"`{one_line(shlex.join(words))}`"

    @property
    def accept(self) -> str:
        return self.command("--snapshot-update")

    @property
    def baseline(self) -> str:
        return self.command("--snapshot-update", one_process=True)

    def raise_budget(self, budget_s: float) -> str:
        flag = f"--workload-time-budget={budget_s:g}"
        return self.command("--snapshot-update", flag, one_process=True)

    @property
    def accept_upgrade(self) -> str:
        return self.command("--snapshot-update", "--workload-accept-upgrade")

    @property
    def run(self) -> str:
        return self.command(one_process=True)


#: A run whose command line chose nothing beyond the defaults.
PLAIN: Final = Commands()
