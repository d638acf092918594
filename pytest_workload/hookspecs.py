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

    from ._core.strict_json import Json


@hookspec(firstresult=True)
def pytest_workload_key(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Json:
    """Return your own key for one recorded call, or None for no key.

    Example:
        A cache keyed by class and input shape:

        ```python
        @pytest.hookimpl(optionalhook=True)
        def pytest_workload_key(module, args, kwargs):
            return [type(module).__name__, list(args[0].shape)]
        ```

    This is the key your compiler, exporter or tuner caches artifacts under. pytest-workload
    records it beside its own fingerprint (``Workload.user_keys``) and, under
    ``--workload-snapshot``, fails the test when distinct workloads share one key (a
    *collapse*), when one workload gets different keys (an *unstable* key) or when a key
    differs from the snapshot. It is called for roots and for recorded submodules alike, on
    every call.

    Args:
        module: The module as called (a compiled or ``DataParallel`` wrapper stays wrapped).
        args: The call's positional arguments.
        kwargs: The call's keyword arguments.

    Returns:
        A JSON value (nested at most 50 deep, as inputs are), or None for no key. A hook that raises
        (``SystemExit`` too) or returns something else fails the test under
        ``--workload-snapshot`` and warns without it, naming the hook.
    """


@hookspec(firstresult=True)
def pytest_workload_describe(value: object) -> Json:
    """Describe an input value pytest-workload cannot, as JSON; None declines.

    Example:
        ```python
        @pytest.hookimpl(optionalhook=True)
        def pytest_workload_describe(value):
            if isinstance(value, PackedBatch):  # a class of your own holding a tensor
                return {"shape": list(value.data.shape), "dtype": str(value.data.dtype)}
            return None
        ```

    It is asked for each value that is not a tensor, array, scalar, string, enum, dtype, device
    or container (tuples, lists, dicts, namedtuples and dataclasses are described item by
    item), before the types pytest-workload knows from torchvision and transformers. The
    description becomes part of the input signature, tagged with the value's type, so it must
    capture what makes two calls different workloads, never an ``id()`` or an address.

    Args:
        value: The argument (or a part of one) to describe.

    Returns:
        A JSON value (nested at most 50 deep), or None to decline (a value no one describes
        fails the test under ``--workload-snapshot`` and warns without it, naming the
        argument path). A hook that raises or returns something else does the same, naming
        the hook.
    """


@hookspec
def pytest_workload_update_json(config: pytest.Config, report: dict[str, Json]) -> None:
    """Add fields to the ``--workload-json`` report before it is written.

    Example:
        ```python
        def pytest_workload_update_json(config, report):
            report["commit"] = os.environ.get("GITHUB_SHA")
        ```

    Add, do not remove or change: the pinned fields are read by ``compare`` and other tools.
    If the hook raises (``SystemExit`` too) or leaves a report ``compare`` cannot read, the
    report is written without its changes, one line says why, and the session exits with
    status 4.

    Args:
        config: The pytest config.
        report: The report as JSON, to change in place.
    """
