"""End-to-end runs of user keys, the describe/report hooks and scheme migration."""

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
    assert '"user_key": ["Net", [1, 3, 16, 16]]' in text
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
    assert report["schema_version"] == 4


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


OLD_RELEASE = """
import pytest
from pytest_workload.plugin import SESSION_KEY
from {module} import {scheme}


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    # what an older pytest-workload, whose current scheme was {scheme}, would have written
    config.stash[SESSION_KEY].scheme = {scheme}
"""
SCHEME_1 = {"module": "pytest_workload._fingerprint.scheme", "scheme": "SCHEME_1"}
SCHEME_0 = {"module": "tests.legacy_scheme", "scheme": "LEGACY_SCHEME"}


def _old_snapshot(pytester, suite, body, old=SCHEME_1):
    """A snapshot written by the release before scheme 2 (``old``: another one)."""
    pytester.makeconftest(OLD_RELEASE.format(**old))
    suite(body)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    stored = pytester.path / "__workload_snapshots__" / "test_models" / "test_two_shapes.workloads"
    version = 1 if old is SCHEME_1 else 0
    assert f'"fingerprint_scheme": {version}' in stored.read_text()
    pytester.makeconftest("")
    return stored


def test_migration_rewrites_after_verifying_old_hashes(pytester, suite, mode):
    stored = _old_snapshot(pytester, suite, two_shapes())
    old_text = stored.read_text()
    result = pytester.runpytest(*mode, "--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit("*written by fingerprint scheme 1; this run uses scheme 2*"))
    assert stored.read_text() == old_text

    migrated = pytester.runpytest(
        *mode, "--workload-snapshot", "--snapshot-update", "--workload-migrate"
    )
    migrated.assert_outcomes(passed=1)
    migrated.stdout.fnmatch_lines(
        lit(
            "*- workload snapshot notes -*",
            "*: migrated __workload_snap**test_two_shapes.workloads from fingerprint scheme 1 to 2",
        )
    )
    assert '"fingerprint_scheme": 2' in stored.read_text()
    pytester.runpytest(*mode, "--workload-snapshot").assert_outcomes(passed=1)


def test_migration_refuses_when_something_else_changed(pytester, suite):
    stored = _old_snapshot(pytester, suite, two_shapes())
    old_text = stored.read_text()
    suite(two_shapes(size=12))
    result = pytester.runpytest("--workload-snapshot", "--snapshot-update", "--workload-migrate")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "refusing to migrate workload snapshot __workload_snap**test_two_shapes.workloads from "
            "scheme 1 to 2: under scheme 1 the recorded workloads no longer match the stored "
            "ones, so something changed besides the scheme:",
            "  changed:  model (test_models.Net) * -> *",
            "*input args[0] (x): shape [1, 3, 16, 16] -> [1, 3, 12, 12]",
            "fix the regression first, or accept it with "
            "`pytest --workload-snapshot --snapshot-update`",
        )
    )
    assert stored.read_text() == old_text


def test_migration_needs_the_old_scheme(pytester, suite):
    stored = _old_snapshot(pytester, suite, two_shapes(), old=SCHEME_0)
    result = pytester.runpytest("--workload-snapshot", "--snapshot-update", "--workload-migrate")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "cannot migrate workload snapshot *: it was written by fingerprint scheme 0, which "
            "this session cannot compute (known: 1)*"
        )
    )
    assert '"fingerprint_scheme": 0' in stored.read_text()


def test_migrate_needs_the_snapshot_gate(pytester, suite):
    suite(two_shapes())
    result = pytester.runpytest("--workload-migrate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --workload-migrate needs --workload-snapshot"])


def test_migrate_needs_snapshot_update_and_says_the_command(pytester, suite):
    stored = _old_snapshot(pytester, suite, two_shapes())
    old_text = stored.read_text()
    result = pytester.runpytest("--workload-snapshot", "--workload-migrate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        lit(
            "ERROR: --workload-migrate needs --snapshot-update: syrupy writes what it rewrites; "
            "run `pytest --workload-snapshot --snapshot-update --workload-migrate`"
        )
    )
    assert stored.read_text() == old_text


def test_migrate_writes_nothing_but_the_migration(pytester, suite):
    # another test's regression fails and its file is left as it is, also under the update
    pytester.makeconftest(OLD_RELEASE.format(**SCHEME_1))
    suite(two_shapes() + two_shapes().replace("test_two_shapes", "test_other"))
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=2)
    pytester.makeconftest("")
    update_other = ("--workload-snapshot", "--snapshot-update", "-k", "test_other")
    pytester.runpytest(*update_other).assert_outcomes(passed=1, deselected=1)
    directory = pytester.path / "__workload_snapshots__" / "test_models"
    migrated, other = directory / "test_two_shapes.workloads", directory / "test_other.workloads"
    assert '"fingerprint_scheme": 1' in migrated.read_text()
    other_text = other.read_text()
    assert '"fingerprint_scheme": 2' in other_text
    stale = directory / "test_gone.workloads"  # unused: a narrowed update deletes nothing
    stale.write_text(other_text)
    suite(two_shapes() + two_shapes(size=12).replace("test_two_shapes", "test_other"))
    result = pytester.runpytest("--workload-snapshot", "--snapshot-update", "--workload-migrate")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(lit("*workload snapshot mismatch (*test_other.workloads):"))
    assert '"fingerprint_scheme": 2' in migrated.read_text()
    assert other.read_text() == other_text
    assert stale.read_text() == other_text
