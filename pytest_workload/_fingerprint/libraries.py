"""Which installed distributions define a module tree's classes, and at which versions.

Recorded beside the hashes (never in them), so that a failure after an upgrade can say which
libraries changed since the snapshot was written.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

_INSTALLED = ("site-packages", "dist-packages")


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """Import names to distribution names, read from every installed distribution (about a
    second on a large environment): asked only for an installed package whose distribution is
    named otherwise (``PIL``, ``sklearn``)."""
    return importlib.metadata.packages_distributions()


def _provides(dist: importlib.metadata.Distribution, package: str, file: Path) -> bool:
    top_level = dist.read_text("top_level.txt")
    if top_level is not None:
        return package in top_level.split()
    home = Path(dist.locate_file(package))  # type: ignore[arg-type]
    return file.is_relative_to(home) or file == home.with_suffix(".py")


@functools.cache
def _providers(package: str) -> tuple[str, ...]:
    """The distributions that provide the imported top-level ``package``: the one of the same
    name, looked up alone; the whole environment is read only for an installed package it
    does not match. A test's own module (not installed) has none."""
    file = getattr(sys.modules.get(package), "__file__", None)
    if file is None:
        return ()
    path = Path(file)
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        if _provides(dist, package, path):
            return (dist.metadata["Name"],)
    if not any(part in _INSTALLED for part in path.parts):
        return ()
    return tuple(_distributions().get(package, ()))


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
    found = {"torch"} | {d for p in packages for d in _providers(p)}
    versions = {name: _version(name) for name in sorted(found)}
    return {name: v for name, v in versions.items() if v is not None}
