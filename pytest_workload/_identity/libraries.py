"""Which installed distributions define a module tree's classes, and at which versions.

Recorded beside the hashes (never in them), so that a failure after an upgrade can say which
libraries changed since the snapshot was written.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Iterable, Mapping


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """Import names to distribution names. Cached (as are versions) because it scans every
    installed distribution, and what is installed does not change during a session."""
    return importlib.metadata.packages_distributions()


@functools.cache
def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def library_versions(packages: Iterable[str]) -> dict[str, str]:
    """torch's version and that of each distribution providing one of ``packages`` (top-level
    import names); a package no installed distribution provides (a test's own module) is
    left out."""
    found = {"torch"} | {d for p in packages for d in _distributions().get(p, ())}
    versions = {name: _version(name) for name in sorted(found)}
    return {name: v for name, v in versions.items() if v is not None}
