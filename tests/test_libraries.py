"""Library versions recorded beside the hashes: found without reading the whole environment
where a package's distribution has its name."""

from __future__ import annotations

import importlib.metadata

import pytest

from pytest_workload._fingerprint import ecosystem as libraries


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Caches emptied; every read of the whole environment is logged."""
    scans: list[str] = []
    real = importlib.metadata.packages_distributions

    def scan() -> object:
        scans.append("scan")
        return real()

    monkeypatch.setattr(importlib.metadata, "packages_distributions", scan)
    for cached in (libraries._distributions, libraries._providers, libraries._version):
        cached.cache_clear()
    yield scans
    for cached in (libraries._distributions, libraries._providers, libraries._version):
        cached.cache_clear()


def test_packages_named_as_their_distribution_are_found_without_reading_the_environment(
    fresh: list[str],
) -> None:
    import timm
    import torchvision  # noqa: F401  (imported: its classes would be in a tree)

    versions = libraries.library_versions(["torch", "torchvision", "timm", __name__.split(".")[0]])
    assert versions == {
        "timm": timm.__version__,
        "torch": importlib.metadata.version("torch"),
        "torchvision": importlib.metadata.version("torchvision"),
    }
    assert fresh == []  # (a test's own module is not installed: nothing is looked for)


def test_an_installed_package_named_otherwise_is_found_by_reading_the_environment(
    fresh: list[str],
) -> None:
    import dateutil  # noqa: F401  (distribution python-dateutil)

    versions = libraries.library_versions(["dateutil"])
    assert versions["python-dateutil"] == importlib.metadata.version("python-dateutil")
    assert fresh == ["scan"]
