"""Every option, ini key and marker argument is checked the same way, once, before any test
runs: a bad one is one usage error (exit 4) naming it (issue 22, item 7)."""

from __future__ import annotations

import pytest

from pytest_workload._options import OPTIONS
from tests.pytester_suite import XDIST_MODES

#: A test that leaves a file behind when it runs: a usage error must come before it.
RAN = """
import pathlib


def test_runs():
    pathlib.Path("ran").write_text("")
"""

BAD_VALUES = [
    ("workload_record", "some", "expected 'marked' or 'all', got 'some'"),
    ("workload_timing", "maybe", "expected 'on' or 'off', got 'maybe'"),
    ("workload_report", "full", "expected 'auto', 'tree' or 'summary', got 'full'"),
    ("workload_time_budget", "inf", "expected a finite number > 0, got 'inf'"),
    ("workload_time_budget", "1e400", "expected a finite number > 0, got '1e400'"),
    ("workload_time_budget", "0", "expected a finite number > 0, got '0'"),
    ("workload_session_budget", "inf", "expected a finite number > 0, got 'inf'"),
    ("workload_device", "tpu", "unknown workload device 'tpu'*"),
    ("workload_perf", "loud", "expected 'on', 'off' or 'strict', got 'loud'"),
    ("workload_perf_tolerance", "nan", "expected a finite number >= 0, got 'nan'"),
    ("workload_perf_tolerance", "1e400", "expected a finite number >= 0, got '1e400'"),
    ("workload_perf_tolerance", "-inf", "expected a finite number >= 0, got '-inf'"),
    ("workload_cost_tolerance", "-0.1", "expected a finite number >= 0, got '-0.1'"),
    ("workload_baselines", "", "expected a directory name, got ''"),
]


def test_every_option_with_a_value_has_a_bad_value_here():
    with_value = {o.ini for o in OPTIONS if o.parse is not bool}
    assert with_value - {k for k, _, _ in BAD_VALUES} == {"workload_json"}


def _refused(result: pytest.RunResult, line: str, pytester: pytest.Pytester) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([line.replace("[", "[[]")])
    assert not (pytester.path / "ran").exists()


@pytest.mark.parametrize(("key", "value", "message"), BAD_VALUES)
def test_a_bad_ini_value_is_a_usage_error_before_any_test(pytester, key, value, message):
    pytester.makepyfile(test_ran=RAN)
    pytester.makeini(f"[pytest]\n{key} = {value}\n")
    _refused(pytester.runpytest(), f"ERROR: ini option {key} = {value!r}: {message}", pytester)


@pytest.mark.parametrize(("key", "value", "message"), BAD_VALUES)
def test_a_bad_command_line_value_is_the_same_usage_error(pytester, key, value, message):
    pytester.makepyfile(test_ran=RAN)
    flag = "--" + key.replace("_", "-")
    _refused(pytester.runpytest(f"{flag}={value}"), f"*{flag}: {message}", pytester)


def test_a_bad_ini_switch_is_a_usage_error_naming_it(pytester):
    pytester.makepyfile(test_ran=RAN)
    pytester.makeini("[pytest]\nworkload_snapshot = maybe\n")
    _refused(pytester.runpytest(), "ERROR: ini option workload_snapshot: *'maybe'*", pytester)


def test_a_nul_in_a_path_is_a_usage_error(pytester):
    pytester.makepyfile(test_ran=RAN)
    result = pytester.runpytest("--workload-json=a\0b")
    _refused(result, "*--workload-json: expected a path, got 'a\\x00b' (a NUL character)", pytester)


def test_the_command_line_wins_over_a_good_ini_value(pytester):
    pytester.makepyfile(test_ran=RAN)
    pytester.makeini("[pytest]\nworkload_report = summary\n")
    result = pytester.runpytest("--workload-report=full")
    _refused(
        result, "*--workload-report: expected 'auto', 'tree' or 'summary', got 'full'", pytester
    )


MARKED = """
import pathlib

import pytest


@pytest.mark.workloads(perf_tolerance={value})
def test_marked():
    pathlib.Path("ran").write_text("")
"""


@pytest.mark.parametrize("mode", ["no-xdist", "n2"])
@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("float('nan')", "nan"),
        ("float('inf')", "inf"),
        ("10**400", "1" + "0" * 400),
        ("-0.5", "-0.5"),
        ("'0.2'", "'0.2'"),
    ],
)
def test_a_bad_marker_tolerance_is_a_usage_error_naming_the_test(pytester, value, shown, mode):
    pytester.makepyfile(test_marked=MARKED.format(value=value))
    result = pytester.runpytest(*XDIST_MODES[mode])
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    message = (
        "test_marked.py::test_marked: @pytest.mark.workloads(perf_tolerance=...) must be a "
        f"finite number >= 0, got {shown}"
    )
    assert message in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "ran").exists()
