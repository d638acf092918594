"""The two ways in to the command line: the ``pytest-workload`` console script and
``python -m pytest_workload``, one entry function."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import pytest

from pytest_workload.__main__ import main


def test_the_console_script_runs_the_entry_function(capsys):
    found = entry_points(group="console_scripts", name="pytest-workload")
    # the installed metadata of an editable install is as old as its install: reinstall
    assert len(found) == 1, "no pytest-workload script installed: run pip install -e ."
    [script] = found
    assert script.load() is main
    with pytest.raises(SystemExit) as exited:
        script.load()(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: pytest-workload ")
    assert "compare" in out and "merge" in out


def test_python_dash_m_shows_its_help(pytester):
    result = pytester.run(sys.executable, "-m", "pytest_workload", "--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["usage: python -m pytest_workload *", "*compare*", "*merge*"])


def test_the_help_says_what_the_command_is_for_and_version_names_the_release(capsys):
    import pytest_workload

    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert "JSON reports that `pytest --workload-json=PATH` writes" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"pytest-workload {pytest_workload.__version__}\n"
