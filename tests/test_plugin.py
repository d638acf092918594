"""End-to-end runs of the plugin through pytester."""

from __future__ import annotations

import json

import pytest

from tests.pytester_suite import XDIST_MODES, lit, two_shapes


def test_marker_records_and_reports_a_tree(pytester, suite):
    suite(two_shapes())
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*= Workloads discovered =*",
            "test_models.py::test_two_shapes",
            "    model (executed 2× – *)",
            "        Class:       Net (test_models.Net)",
            "        Location:    test_models.py:*",
            "        Parameters:  270 (<0.1 MB)",
            "        Input:       (float32[1, 3, 8, 8])",
            "        Hash:        ????????",
            "",
            "            stem (executed 2× – *)",
            "*",
            "    model (executed 1× – *)",
            "*Input:       (float32[1, 3, 16, 16])",
        )
    )


def test_report_is_quiet_under_q(pytester, suite):
    suite(two_shapes())
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=1)
    assert "Workloads discovered" not in result.stdout.str()


def test_json_report_has_the_pinned_fields(pytester, suite, mode):
    suite(two_shapes())
    pytester.runpytest(*mode, "--workload-json=out/report.json").assert_outcomes(passed=1)
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    assert data["schema_version"] == 1
    (test,) = data["tests"]
    assert test["nodeid"] == "test_models.py::test_two_shapes"
    roots = [w for w in test["workloads"] if w["parent"] is None]
    assert [r["calls"] for r in roots] == [2, 1]
    for w in test["workloads"]:
        assert {
            "name",
            "class",
            "depth",
            "parent",
            "structure_hash",
            "input_signature",
            "key",
            "hash",
            "calls",
            "params",
        } <= set(w)
        assert len(w["hash"]) == 64
        assert w["key"][0] == w["structure_hash"]
    children = [w for w in test["workloads"] if w["parent"] is not None]
    assert {c["parent"] for c in children} == {r["hash"] for r in roots}


def test_timing_off_keeps_hashes_and_drops_times(pytester, suite):
    suite(two_shapes())
    result = pytester.runpytest("--workload-timing=off", "--workload-json=r.json")
    result.stdout.fnmatch_lines(lit("    model (executed 2×)"))
    data = json.loads((pytester.path / "r.json").read_text())
    assert {w["total_time_s"] for w in data["tests"][0]["workloads"]} == {None}


def test_ini_options_are_read(pytester, suite):
    suite(two_shapes())
    pytester.makeini("[pytest]\nworkload_timing = off\nworkload_json = from-ini.json\n")
    pytester.runpytest().stdout.fnmatch_lines(lit("    model (executed 2×)"))
    assert (pytester.path / "from-ini.json").exists()


def test_fixture_tracks_a_model_in_an_unmarked_test(pytester, suite):
    suite(
        """
def test_tracked(workloads):
    model = workloads.track(Net().eval(), max_depth=1)
    other = nn.Linear(2, 2)
    model(torch.rand(1, 3, 8, 8))
    other(torch.rand(1, 2))
    recorded = workloads.workloads()
    assert [w.name for w in recorded.roots()] == ["model"]
    assert {w.name for w in recorded.children(recorded.roots()[0])} == {"stem", "blocks", "head"}


def test_unmarked_records_nothing():
    Net()(torch.rand(1, 3, 8, 8))
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)
    assert "test_unmarked_records_nothing" not in result.stdout.str()


def test_snapshot_lifecycle_create_pass_fail(pytester, suite, mode):
    suite(two_shapes())
    missing = pytester.runpytest(*mode, "--workload-snapshot")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        lit("*no workload snapshot __workload_snapshots__*test_two_shapes.workloads*")
    )

    pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    stored = pytester.path / "__workload_snapshots__" / "test_models" / "test_two_shapes.workloads"
    text = stored.read_text()
    assert '"class": "test_models.Net"' in text and '"input": "(float32[1, 3, 16, 16])"' in text
    pytester.runpytest(*mode, "--workload-snapshot").assert_outcomes(passed=1)

    suite(two_shapes(size=12))
    changed = pytester.runpytest(*mode, "--workload-snapshot")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        lit(
            "workload snapshot mismatch (__workload_snapshots__*test_two_shapes.workloads):",
            "  changed:  model (test_models.Net) * -> *",
            "      input args[0] (x): shape [1, 3, 16, 16] -> [1, 3, 12, 12]",
            "*run `pytest --workload-snapshot --snapshot-update` to accept*",
        )
    )
    assert stored.read_text() == text
    # without the gate, a change is recorded and reported but fails nothing
    pytester.runpytest(*mode).assert_outcomes(passed=1)
    # the gate on in the ini file, off for one run from the command line
    gated = ("-o", "workload_snapshot=true")
    pytester.runpytest(*mode, *gated).assert_outcomes(failed=1)
    pytester.runpytest(*mode, *gated, "--no-workload-snapshot").assert_outcomes(passed=1)


def test_structure_change_names_the_submodule(pytester, suite):
    suite(two_shapes())
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    suite(two_shapes(), kernel=5)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "  changed:  model (test_models.Net) * -> *",
            "      structure changed (structure hash * -> *)",
            "      Conv2d attribute kernel_size [3, 3] -> [5, 5] (1 module: stem)",
            "      Conv2d attribute padding [1, 1] -> [2, 2] (1 module: stem)",
            "      Conv2d parameter weight shape [4, 3, 3, 3] -> [4, 3, 5, 5] (1 module: stem)",
            "  changed:  stem (torch.nn.modules.conv.Conv2d) * -> *",
        )
    )


def test_vanished_workload_fails(pytester, suite):
    suite(two_shapes())
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    suite(two_shapes().replace("    model(torch.rand(1, 3, 16, 16))\n", ""))
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit("  vanished: model (test_models.Net) *, input (float32[1, 3, 16, 16])")
    )


SHAPE_BLIND = """
import pytest
from pytest_workload._fingerprint.structure import FingerprintScheme
from pytest_workload._core.strict_json import sha256_hex
from pytest_workload.plugin import SESSION_KEY


class ShapeBlind(FingerprintScheme):
    # the classic bug: a workload hash that forgets the inputs
    def workload_hash(self, structure, signature):
        return sha256_hex(structure)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    config.stash[SESSION_KEY].scheme = ShapeBlind(1)
"""


def test_collapse_in_one_test_fails_and_lists_both(pytester, suite):
    pytester.makeconftest(SHAPE_BLIND)
    suite(two_shapes())
    result = pytester.runpytest("--workload-snapshot", "--snapshot-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "workload hash collapse: two distinct workloads share the hash *",
            "  - test_models.py::test_two_shapes: model (test_models.Net), "
            "input (float32[1, 3, 8, 8]), structure *",
            "  - test_models.py::test_two_shapes: model (test_models.Net), "
            "input (float32[1, 3, 16, 16]), structure *",
        )
    )


def test_collapse_across_tests_fails_the_later_test(pytester, suite, mode):
    pytester.makeconftest(SHAPE_BLIND)
    suite(
        """
@pytest.mark.workloads
def test_small():
    Net()(torch.rand(1, 3, 8, 8))


@pytest.mark.workloads
def test_big():
    Net()(torch.rand(1, 3, 16, 16))
"""
    )
    result = pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    if mode != XDIST_MODES["n2"]:  # on two workers, neither test saw the other: the session fails
        result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "workload hash collapse: two distinct workloads share the hash *",
            "*test_small: Net (test_models.Net)*8, 8*",
            "*test_big: Net (test_models.Net)*16, 16*",
        )
    )


def test_corrupt_snapshot_is_a_clear_error_and_only_rewritten_on_update(pytester, suite):
    suite(two_shapes())
    stored = pytester.path / "__workload_snapshots__" / "test_models" / "test_two_shapes.workloads"
    stored.parent.mkdir(parents=True)
    stored.write_text('{"pytest_workload_snapshot": 1, "workloads": [')
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit("corrupt workload snapshot __workload_snap**test_two_shapes.workloads: not valid JSON*")
    )
    assert stored.read_text().endswith("[")
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=1)


def test_unused_snapshot_follows_syrupy(pytester, suite, mode):
    suite(two_shapes() + two_shapes().replace("test_two_shapes", "test_other"))
    pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update").assert_outcomes(passed=2)
    suite(two_shapes())
    result = pytester.runpytest(*mode, "--workload-snapshot")
    result.stdout.fnmatch_lines(lit("*1 snapshot unused*"))
    assert result.ret == 1
    pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update").stdout.fnmatch_lines(
        lit("*1 unused snapshot deleted*")
    )
    assert not (
        pytester.path / "__workload_snapshots__" / "test_models" / "test_other.workloads"
    ).exists()


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "workloads(depth=2)",
            " got unknown argument depth (it takes compile, max_depth, perf_tolerance, record)",
        ),
        (
            "workloads(compile='inductor')",
            "(compile=...) must be 'eager' or 'aot_eager', got 'inductor'",
        ),
        ("workloads(max_depth=-1)", "(max_depth=...) must be an int >= 0, got -1"),
        ("workloads(max_depth='2')", "(max_depth=...) must be an int >= 0, got '2'"),
        ("workloads(2)", " takes keyword arguments only, got (2,)"),
    ],
)
def test_bad_marker_is_a_usage_error(pytester, suite, marker, message):
    suite(f"\n@pytest.mark.{marker}\ndef test_bad():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        lit(f"ERROR: test_models.py::test_bad: @pytest.mark.workloads{message}")
    )


def test_hooks_are_removed_after_a_raising_model(pytester, suite):
    suite(
        """
class Boom(nn.Module):
    def forward(self, x):
        raise ValueError("the model's own error")


@pytest.mark.workloads(max_depth=2)
def test_raises():
    Boom()(torch.rand(1))


def test_after():
    from torch.nn.modules import module
    assert not module._global_forward_pre_hooks
    assert not module._global_forward_hooks
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(lit("E *ValueError: the model's own error"))


OPAQUE = """
class Takes(nn.Module):
    def forward(self, x, config):
        return x


@pytest.mark.workloads
def test_opaque():
    Takes()(torch.rand(1), object())
"""
UNDESCRIBABLE = (
    "pytest-workload could not record: Takes (test_models.Takes) called at "
    "test_models.py:*: cannot describe input args[1] of type builtins.object*"
)


def test_undescribable_input_fails_with_the_argument_path_under_the_gate(pytester, suite):
    suite(OPAQUE)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit(UNDESCRIBABLE))


def test_undescribable_input_only_warns_without_the_gate(pytester, suite, mode):
    suite(OPAQUE)
    result = pytester.runpytest(*mode)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        lit("*WorkloadWarning: test_models.py::test_opaque: " + UNDESCRIBABLE)
    )
    assert result.ret == 0


def test_plugin_can_be_disabled(pytester, suite):
    suite(two_shapes())
    result = pytester.runpytest("-p", "no:workload", "--workload-snapshot")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_an_optional_hook_lets_a_conftest_load_without_the_plugin(pytester):
    pytester.makeconftest(
        """
import pytest

@pytest.hookimpl(optionalhook=True)
def pytest_workload_key(module, args, kwargs):
    return None
"""
    )
    pytester.makepyfile("def test_plain():\n    pass\n")
    pytester.runpytest("-p", "no:workload").assert_outcomes(passed=1)


def test_a_session_without_workloads_never_imports_torch(pytester):
    pytester.makeconftest(
        """
import sys

def pytest_sessionfinish(session):
    print("torch imported:", "torch" in sys.modules)
"""
    )
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(lit("*torch imported: False"))


def _comparable(report: dict) -> dict:
    """The report less how it was timed: xdist workers replay nothing for timing, so they
    time otherwise and pin no allocator."""
    report.pop("not_replayed", None)
    report["environment"].pop("allocator")
    for test in report["tests"]:
        for w in test["workloads"]:
            w.pop("total_time_s")
            w.pop("timing")
            for field in ("timing", "timing_reason", "timing_left_out"):
                w["measured"].pop(field)
    return report


def test_xdist_gives_the_serial_report_and_snapshots(pytester, suite):
    suite(two_shapes() + two_shapes(size=12).replace("test_two_shapes", "test_other"))
    serial = pytester.runpytest(
        "--workload-json=serial.json", "--workload-snapshot", "--snapshot-update"
    )
    serial.assert_outcomes(passed=2)
    snapshots = sorted((pytester.path / "__workload_snapshots__").rglob("*.workloads"))
    texts = [p.read_text() for p in snapshots]
    for p in snapshots:
        p.unlink()
    # a subprocess: its controller, unlike this process, never imports torch
    parallel = pytester.runpytest_subprocess(
        "-n", "2", "--workload-json=parallel.json", "--workload-snapshot", "--snapshot-update"
    )
    parallel.assert_outcomes(passed=2)
    assert [p.read_text() for p in snapshots] == texts
    load = lambda name: _comparable(json.loads((pytester.path / name).read_text()))  # noqa: E731
    assert load("serial.json") == load("parallel.json")
    parallel.stdout.fnmatch_lines(lit("*= Workloads discovered =*", "test_models.py::test_other"))
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=2)
    pytester.runpytest("-n", "2", "--workload-snapshot").assert_outcomes(passed=2)


def test_a_crashed_xdist_worker_is_reported(pytester, suite):
    suite(
        two_shapes()
        + """

@pytest.mark.workloads
def test_crash():
    import os
    Net()(torch.rand(1, 3, 8, 8))
    os._exit(1)
"""
    )
    result = pytester.runpytest("-n", "2", "--workload-json=r.json")
    result.stdout.fnmatch_lines(
        lit(
            "*= workload problems across xdist workers =*",
            "xdist worker gw* sent no workload data (it crashed or was killed)*: "
            "*test_models.py::test_crash*",
        )
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["schema_version"] == 1
    (problem,) = report["problems"]
    assert "test_models.py::test_crash" in problem
