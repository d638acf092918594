"""MkDocs hook: the option reference, generated from the plugin's own option table.

A page that holds ``<!-- options -->`` gets, in its place, every option and ini key exactly
as ``add_options`` declares them to pytest (flag, value, ini key, default, help text), so the
reference cannot drift from the code. A build whose page lacks the marker fails.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Document this checkout, not whichever pytest_workload the build's environment installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pytest_workload._options import add_options

MARKER = "<!-- options -->"
PAGE = "reference/options.md"
#: add_options ends every help text with its default and ini key, shown here as fields.
_SUFFIX = re.compile(r" \(default: [^;]*; ini: \w+\)$")


@dataclass
class _Option:
    flag: str
    metavar: str | None
    switch: bool
    help: str
    ini: str = ""
    default: object = None


@dataclass
class _Recorder:
    """Stands in for pytest's parser and its option group: keeps what add_options declares."""

    options: list[_Option] = field(default_factory=list)

    def getgroup(self, name: str, description: str = "") -> _Recorder:
        return self

    def addoption(self, flag: str, **kwargs: Any) -> None:
        text = _SUFFIX.sub("", kwargs["help"]).replace("%%", "%")
        switch = "metavar" not in kwargs
        self.options.append(_Option(flag, kwargs.get("metavar"), switch, text))

    def addini(self, name: str, help: str, type: str | None = None, default: object = "") -> None:
        (option,) = (o for o in self.options if help == f"default for {o.flag}")
        option.ini, option.default = name, default


def _default(value: object) -> str:
    if value is False:
        return "off"
    return f"`{value}`" if value else "none"


def _entry(option: _Option) -> list[str]:
    anchor = option.ini
    if option.switch:
        title = f"`{option.flag}`, `--no-{option.flag.removeprefix('--')}`"
    else:
        title = f"`{option.flag}={option.metavar}`"
    return [
        f"### {title} {{#{anchor}}}",
        "",
        f"ini key `{option.ini}` · default {_default(option.default)}",
        "",
        f"{option.help[0].upper()}{option.help[1:]}.",
        "",
    ]


def options_markdown() -> str:
    recorder = _Recorder()
    add_options(recorder)
    return "\n".join(line for option in recorder.options for line in _entry(option))


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} must hold {MARKER}, where the option reference goes")
    return markdown.replace(MARKER, options_markdown())
