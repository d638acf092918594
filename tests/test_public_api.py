"""The public API: the names ``pytest_workload`` exports, each documented, its docstrings'
examples run; the hooks and fixtures documented; one version."""

from __future__ import annotations

import doctest
import inspect
from importlib.metadata import version
from types import ModuleType

import pytest

import pytest_workload
from pytest_workload import hookspecs, plugin

PUBLIC = [
    "InputSignature",
    "SessionReport",
    "TestWorkloads",
    "Timing",
    "Workload",
    "WorkloadError",
    "WorkloadRecorder",
    "WorkloadWarning",
    "distance_factor",
    "nearest",
    "read_report",
    "structure_hash",
]


def test_all_is_pinned():
    assert pytest_workload.__all__ == PUBLIC


def test_nothing_else_is_importable_from_the_package():
    names = {
        name
        for name, value in vars(pytest_workload).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    }
    assert names - {"annotations"} == set(PUBLIC)  # (from __future__ import annotations)
    with pytest.raises(ImportError):
        exec("from pytest_workload import CorruptFileError", {})


def _documented(obj: object) -> bool:
    doc = obj.__doc__ or ""
    # a dataclass without a docstring gets its signature as one
    return bool(doc.strip()) and not doc.startswith(f"{getattr(obj, '__name__', '')}(")


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_is_documented(name: str):
    obj = getattr(pytest_workload, name)
    assert _documented(obj), name
    if not inspect.isclass(obj):
        return
    undocumented = [
        member
        for member, value in vars(obj).items()
        if not member.startswith("_")
        and (callable(value) or isinstance(value, property | classmethod))
        and not _documented(getattr(obj, member))
    ]
    assert not undocumented, f"{name}: {undocumented}"


def _examples() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(recurse=False)
    tests = [t for name in PUBLIC for t in finder.find(getattr(pytest_workload, name), name)]
    return [t for t in tests if t.examples]


@pytest.mark.parametrize("example", _examples(), ids=lambda t: t.name)
def test_docstring_examples_run(example: doctest.DocTest):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(example)
    assert runner.summarize(verbose=False).failed == 0


def test_the_docstring_examples_are_found():
    assert {t.name for t in _examples()} == {
        "WorkloadRecorder",
        "distance_factor",
        "nearest",
        "structure_hash",
    }


@pytest.mark.parametrize(
    "hook", [getattr(hookspecs, n) for n in dir(hookspecs) if n.startswith("pytest_workload_")]
)
def test_every_hook_documents_its_arguments(hook):
    doc = inspect.getdoc(hook) or ""
    assert "Args:" in doc, hook.__name__
    returns = inspect.signature(hook).return_annotation != "None"
    assert ("Returns:" in doc) == returns, hook.__name__
    missing = [p for p in inspect.signature(hook).parameters if f"    {p}: " not in doc]
    assert not missing, f"{hook.__name__}: {missing}"


@pytest.mark.parametrize("fixture", ["workloads", "workload_device"])
def test_the_fixtures_are_documented(fixture: str):
    assert (inspect.getdoc(getattr(plugin, fixture)) or "").strip()


def test_the_version_is_the_installed_one():
    # an editable install reads the source's __version__ at install time: reinstall after a bump
    assert pytest_workload.__version__ == version("pytest-workload")
