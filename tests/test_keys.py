"""End-to-end runs of user keys and the describe/report hooks."""

from __future__ import annotations

import json
import sys

import pytest

from tests.pytester_suite import XDIST_MODES, lit, two_shapes

WEIGHT_KEY = """
import hashlib


def pytest_workload_key(module, args, kwargs):
    # the classic bug: a cache key made from the weights
    digest = hashlib.sha256()
    for p in module.parameters():
        digest.update(p.detach().numpy().tobytes())
    return digest.hexdigest()[:16]
"""

SHAPE_KEY = """
def pytest_workload_key(module, args, kwargs):
    return [type(module).__name__, *[list(a.shape) for a in args]]
"""


def test_weight_key_collapses_two_shapes(pytester, suite):
    pytester.makeconftest(WEIGHT_KEY)
    suite(two_shapes())
    result = pytester.runpytest("--workload-snapshot", "--snapshot-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "user key collapse: two distinct workloads share the key *",
            "  - test_models.py::test_two_shapes: model (test_models.Net), "
            "input (float32[1, 3, 8, 8]), hash *",
            "  - test_models.py::test_two_shapes: model (test_models.Net), "
            "input (float32[1, 3, 16, 16]), hash *",
        )
    )


REINIT = """
@pytest.mark.workloads
def test_first():
    torch.manual_seed(0)
    Net(KERNEL).eval()(torch.rand(1, 3, 8, 8))


@pytest.mark.workloads
def test_reinitialised():
    torch.manual_seed(1)
    Net(KERNEL).eval()(torch.rand(1, 3, 8, 8))
"""


def test_weight_key_is_unstable_across_reinitialisation(pytester, suite, mode):
    pytester.makeconftest(WEIGHT_KEY)
    suite(REINIT)
    result = pytester.runpytest(*mode, "--workload-snapshot", "--snapshot-update")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    if mode != XDIST_MODES["n2"]:
        result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "unstable user key: one workload got different keys from pytest_workload_key:",
            "  workload: Net (test_models.Net), input (float32[1, 3, 8, 8]), hash *",
            '  - test_models.py::test_first, call 1: "*"',
            '  - test_models.py::test_reinitialised, call 1: "*"',
        )
    )


def test_stable_shape_key_passes_and_is_stored(pytester, suite):
    pytester.makeconftest(SHAPE_KEY)
    suite(two_shapes() + REINIT)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=3)
    text = (
        pytester.path / "__workload_snapshots__/test_models/test_two_shapes.workloads"
    ).read_text()
    assert '"user_keys": [{"key": ["Net", [1, 3, 16, 16]]}]' in text
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=3)


def test_changed_user_key_fails_like_a_hash_change(pytester, suite):
    pytester.makeconftest(SHAPE_KEY)
    suite(two_shapes())
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    pytester.makeconftest(SHAPE_KEY.replace("type(module).__name__", '"v2"'))
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "  changed:  model (test_models.Net) * -> *",
            '      user key changed: ["Net",[1,3,8,8]] -> ["v2",[1,3,8,8]]',
        )
    )


def test_user_key_problems_together_with_a_hash_change(pytester, suite):
    pytester.makeconftest(SHAPE_KEY)
    suite(two_shapes())
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    pytester.makeconftest(WEIGHT_KEY)
    suite(two_shapes(size=12))
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "user key collapse: two distinct workloads share the key" in out
    result.stdout.fnmatch_lines(
        lit(
            "workload snapshot mismatch (__workload_snapshots__*test_two_shapes.workloads):",
            "  changed:  model (test_models.Net) * -> *",
            "      user key changed: * -> *",
            "*input args[0] (x): shape [1, 3, 16, 16] -> [1, 3, 12, 12]",
        )
    )


def test_instability_together_with_a_hash_change(pytester, suite):
    pytester.makeconftest(SHAPE_KEY)
    suite(REINIT)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=2)
    pytester.makeconftest(WEIGHT_KEY)
    suite(REINIT, kernel=5)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        lit("unstable user key: one workload got different keys from pytest_workload_key:")
    )
    result.stdout.fnmatch_lines(lit("      structure changed (structure hash * -> *)"))


def test_key_hook_errors_are_reported(pytester, suite):
    pytester.makeconftest("def pytest_workload_key(module, args, kwargs):\n    return object()\n")
    suite(two_shapes())
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit("pytest-workload could not record: pytest_workload_key failed for model: TypeError*")
    )
    unguarded = pytester.runpytest()
    unguarded.assert_outcomes(passed=1, warnings=1)
    unguarded.stdout.fnmatch_lines(
        lit("*WorkloadWarning: *::test_two_shapes: pytest-workload could not record: *TypeError*")
    )


TOKENIZER = """
class Tokenizer:
    def __init__(self, vocab):
        self.vocab = vocab


class Embed(nn.Module):
    def forward(self, x, tokenizer):
        return x


@pytest.mark.workloads
def test_custom():
    model = Embed()
    model(torch.rand(1), Tokenizer(100))
    model(torch.rand(1), Tokenizer(200))
"""


def test_describe_hook_makes_a_custom_input_part_of_the_signature(pytester, suite):
    pytester.makeconftest(
        """
from test_models import Tokenizer


def pytest_workload_describe(value):
    if isinstance(value, Tokenizer):
        return {"vocab": value.vocab}
"""
    )
    suite(TOKENIZER)
    pytester.runpytest("--workload-json=r.json").assert_outcomes(passed=1)
    workloads = json.loads((pytester.path / "r.json").read_text())["tests"][0]["workloads"]
    assert [w["input"] for w in workloads] == [
        "(float32[1], Tokenizer<{'vocab': 100}>)",
        "(float32[1], Tokenizer<{'vocab': 200}>)",
    ]


def test_update_json_hook_adds_fields(pytester, suite):
    pytester.makeconftest(
        """
def pytest_workload_update_json(config, report):
    report["ci"] = {"commit": "abc123"}
"""
    )
    suite(two_shapes())
    pytester.runpytest("--workload-json=r.json").assert_outcomes(passed=1)
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["ci"] == {"commit": "abc123"}
    assert report["schema_version"] == 1


FAILING_UPDATE_JSON = {
    "raises": ('raise RuntimeError("boom")', "RuntimeError('boom')"),
    "exits": ("raise SystemExit(3)", "SystemExit(3)"),
    "nan": ('report["tests"][0]["workloads"][0]["flops"] = float("nan")', "ValueError("),
    "tests=5": ('report["tests"] = 5', "WorkloadDataError("),
}


@pytest.mark.parametrize("how", list(FAILING_UPDATE_JSON))
def test_a_failing_update_json_hook_is_one_line_and_the_report_is_written_without_it(
    pytester, suite, how
):
    body, says = FAILING_UPDATE_JSON[how]
    pytester.makeconftest(
        f"""
def pytest_workload_update_json(config, report):
    report["ci"] = {{"commit": "abc123"}}
    {body}
"""
    )
    suite(two_shapes())
    mode = ("-n", "2") if how == "raises" else ("-p", "no:xdist")
    result = pytester.runpytest(*mode, "--workload-json=r.json")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        lit(
            f"pytest-workload: pytest_workload_update_json failed ({says}*); the JSON report is "
            "written without its changes"
        )
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert "ci" not in report and report["tests"][0]["nodeid"] == "test_models.py::test_two_shapes"
    compared = pytester.run(sys.executable, "-m", "pytest_workload", "compare", "r.json", "r.json")
    assert compared.ret == 0


def test_a_describe_hook_that_exits_fails_the_test_naming_the_hook(pytester, suite):
    pytester.makeconftest(
        """
from test_models import Tokenizer


def pytest_workload_describe(value):
    if isinstance(value, Tokenizer):
        raise SystemExit(3)
"""
    )
    suite(TOKENIZER)
    result = pytester.runpytest("--workload-snapshot", "--snapshot-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*cannot describe input args[1] of type test_models.Tokenizer: "
            "pytest_workload_describe failed: SystemExit(3)*"
        )
    )
    assert "Traceback" not in result.stdout.str()
    assert not (pytester.path / "__workload_snapshots__").exists()
