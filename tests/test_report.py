"""The terminal section at suite scale: every test's tree for a small session or on request,
counts for a large one."""

from __future__ import annotations

import pytest

from tests.pytester_suite import MODELS, SUITE_INI, XDIST_MODES

MANY = """
@pytest.mark.workloads
@pytest.mark.parametrize("size", range(8, 8 + COUNT))
def test_size(size):
    Net().eval()(torch.rand(1, 3, size, size))
"""


def _suite(pytester: pytest.Pytester, count: int) -> None:
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(test_many=MODELS + MANY.replace("COUNT", str(count)))


def test_a_large_session_gets_counts_not_trees(pytester):
    _suite(pytester, 21)
    result = pytester.runpytest("--workload-timing=off")
    result.assert_outcomes(passed=21)
    result.stdout.fnmatch_lines(
        [
            "*= Workloads discovered =*",
            "21 tests recorded 21 workloads (21 top-level, 21 distinct hashes); no collapse "
            "across the session",
            "workload gate off: nothing was checked (--workload-snapshot checks)",
            "each test's tree: --workload-report=tree; every field: --workload-json=PATH",
        ]
    )
    result.stdout.no_fnmatch_line("*Hash:*")


def test_the_tree_on_request(pytester):
    _suite(pytester, 21)
    result = pytester.runpytest("--workload-timing=off", "--workload-report=tree")
    result.assert_outcomes(passed=21)
    assert result.stdout.str().count("Hash:") == 21


@pytest.mark.parametrize(
    "verbose", [("-v",), ("-vv",), ("-o", "log_cli=true")], ids=["-v", "-vv", "ini log_cli"]
)
def test_verbosity_does_not_turn_a_large_report_into_trees(pytester, verbose):
    """An ini ``log_cli`` raises the verbosity: a 3,000-test suite printed every tree."""
    _suite(pytester, 21)
    result = pytester.runpytest("--workload-timing=off", *verbose)
    result.assert_outcomes(passed=21)
    result.stdout.fnmatch_lines(["21 tests recorded 21 workloads *"])
    result.stdout.no_fnmatch_line("*Hash:*")


def test_a_small_session_gets_trees_and_summary_on_request(pytester):
    _suite(pytester, 2)
    trees = pytester.runpytest("--workload-timing=off")
    assert trees.stdout.str().count("Hash:") == 2
    counts = pytester.runpytest("--workload-timing=off", "--workload-report=summary")
    counts.stdout.fnmatch_lines(["2 tests recorded 2 workloads (2 top-level, 2 distinct*"])
    counts.stdout.no_fnmatch_line("*Hash:*")


def test_collapses_are_counted(pytester):
    pytester.makeconftest(
        "def pytest_workload_key(module, args, kwargs):\n    return type(module).__name__\n"
    )
    _suite(pytester, 2)
    result = pytester.runpytest("--workload-timing=off", "--workload-report=summary")
    result.stdout.fnmatch_lines(["2 tests recorded 2 workloads (*); 1 collapse across the session"])


@pytest.mark.parametrize("mode", ["no-xdist", "n2"])
def test_the_gate_s_failures_are_counted_from_every_process(pytester, mode):
    _suite(pytester, 21)
    gate = ("--workload-timing=off", "--workload-snapshot", *XDIST_MODES[mode])
    pytester.runpytest(*gate, "--snapshot-update").assert_outcomes(passed=21)
    passing = pytester.runpytest(*gate)
    passing.assert_outcomes(passed=21)
    passing.stdout.fnmatch_lines(["workload gate: no test failed it"])
    # two tests now call their model at another shape: their snapshots no longer match
    moved = MANY.replace("COUNT", "21").replace("size, size)", "size, size + (size in (9, 20)))")
    pytester.makepyfile(test_many=MODELS + moved)
    failing = pytester.runpytest(*gate)
    failing.assert_outcomes(passed=19, failed=2)
    failing.stdout.fnmatch_lines(
        ["workload gate: 2 tests failed it, with 0 performance regressions"]
    )


def test_a_bad_report_mode_is_a_usage_error(pytester):
    _suite(pytester, 1)
    result = pytester.runpytest("--workload-report=full")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*expected 'auto', 'tree' or 'summary', got 'full'*"])


def test_the_summary_counts_one_of_a_kind_in_the_singular(pytester):
    pytester.makeini(SUITE_INI)
    body = "\n\n@pytest.mark.workloads\ndef test_one():\n    Net().eval()(torch.rand(1, 3, 8, 8))\n"
    pytester.makepyfile(test_one=MODELS + body)
    result = pytester.runpytest("--workload-report=summary")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["1 test recorded 1 workload (1 top-level, 1 distinct hash); *"])
