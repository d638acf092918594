"""Hooks pytest-workload calls. Implement them in a ``conftest.py`` or a plugin.

A ``conftest.py`` that must also load with the plugin disabled (``-p no:workload``) marks its
implementations ``@pytest.hookimpl(optionalhook=True)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

hookspec = pluggy.HookspecMarker("pytest")

if TYPE_CHECKING:
    import pytest
    from torch import nn

    from ._core.canonical import Json
    from ._fingerprint.scheme import FingerprintScheme


@hookspec(firstresult=True)
def pytest_workload_key(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Json:
    """Return your own key for one recorded call, or None for no key.

    This is the key your compiler, exporter or tuner caches artifacts under. pytest-workload
    records it beside its own fingerprint and, under ``--workload-snapshot``, fails the test
    when distinct workloads share one key (a *collapse*), when one workload gets different keys
    (an *unstable* key) or when a key differs from the snapshot. The key must be
    JSON-serialisable. ``module`` is the module as called (a compiled or DataParallel wrapper
    stays wrapped); it is called for roots and for recorded submodules alike.
    """


@hookspec(firstresult=True)
def pytest_workload_describe(value: object) -> Json:
    """Describe an input value pytest-workload cannot, as JSON; None declines.

    The description becomes part of the input signature (tagged with the value's type), so
    it must capture what makes two calls different workloads, never an ``id()`` or address.
    """


@hookspec
def pytest_workload_update_json(config: pytest.Config, report: dict[str, Json]) -> None:
    """Add fields to the ``--workload-json`` report before it is written.

    Add, do not remove or change: the pinned fields are read by ``compare`` and other tools.
    """


@hookspec
def pytest_workload_schemes(config: pytest.Config) -> list[FingerprintScheme]:
    """Return fingerprint schemes this session can compute beyond the built-in ones.

    ``--workload-migrate`` uses the scheme a snapshot was written with to check each stored
    hash before syrupy rewrites the snapshot under the current scheme.
    """
