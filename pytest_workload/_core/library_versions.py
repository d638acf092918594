"""Library versions as messages show them."""

from __future__ import annotations

from collections.abc import Mapping


def format_versions(versions: Mapping[str, str]) -> str:
    """``torch 2.11.0, timm 1.0.20``: torch first, then the others by name."""
    names = sorted(versions, key=lambda n: (n != "torch", n))
    return ", ".join(f"{n} {versions[n]}" for n in names) or "unknown versions"


def versions_line(before: Mapping[str, str], after: Mapping[str, str]) -> str | None:
    """One line naming the library versions when they differ (None when they do not, or
    when the stored side recorded none)."""
    if not before or dict(before) == dict(after):
        return None
    return f"written with {format_versions(before)}; this run: {format_versions(after)}"
