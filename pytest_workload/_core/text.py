"""Escaping what users name (tests, modules, inputs, paths, hook answers) for each output: no
name may add a line to the terminal or a text report, move the cursor, clear the screen or set
the window title there (ESC, OSC, BEL), or add a header, a link or markup to a Markdown summary
or PR comment. Data stays raw in files and JSON; it is escaped where it is rendered."""

from __future__ import annotations

import html
import unicodedata
from typing import Final

#: What Markdown gives a meaning inside a line (GitHub's ``$`` maths included); what it gives a
#: meaning at a line's start cannot arise, since no escaped text contains a line break.
_MARKDOWN_PUNCTUATION: Final = frozenset("\\`*_{}[]()#!|~$^")


def one_line(text: str) -> str:
    """Line breaks and other control characters as visible escapes (``\\n``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def terminal_text(text: str) -> str:
    """A message of several lines for the terminal: its own line breaks kept, every other
    control character shown as an escape. Each user-chosen part of it must already be
    ``one_line``: a line break inside a name would otherwise forge a line."""
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
    """``text`` as literal Markdown (also in a table cell): inline markup characters escaped,
    ``&<>`` as entities, line breaks and control characters shown as escapes."""
    return "".join(_markdown_char(c) for c in text)


def markdown_code(text: str) -> str:
    """``text`` in a monospace span. Not a backtick span, which a backtick in the text would
    end: HTML ``<code>`` around escaped text, which nothing in the text can end."""
    return f"<code>{markdown_text(text)}</code>"


def html_pre(text: str) -> str:
    """A preformatted block (for multi-line messages) that the text cannot end."""
    return f"<pre>{html.escape(text)}</pre>"


_INDENT = "    "


def format_duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
