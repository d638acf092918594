"""Snapshots after a library upgrade: library versions named, changed fields grouped across
modules (below max_depth too), --workload-accept-upgrade rewriting only wording changes."""

from __future__ import annotations

import json

import pytest

from tests.pytester_suite import lit

NORMS = """
class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(4)
        self.layers = nn.Sequential(
            *[nn.Sequential(nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4)) for _ in range(5)]
        )

    def forward(self, x):
        return self.layers(self.bn1(x))


@pytest.mark.workloads
def test_norms():
    model = Norms().eval()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            CHANGE
    model(torch.rand(1, 4, 4, 4))
"""

STORED = ("__workload_snapshots__", "test_models", "test_norms.workloads")


def _norms(suite, change: str = "pass") -> None:
    suite(NORMS.replace("CHANGE", change))


def _written(pytester, suite):
    _norms(suite)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    return pytester.path.joinpath(*STORED)


def test_an_attribute_changed_in_many_modules_is_one_grouped_line(pytester, suite):
    stored = _written(pytester, suite)
    _norms(suite, "m.variant = 'b'")
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "      structure changed (structure hash * -> *)",
            '      BatchNorm2d attribute variant added: "b" (6 modules: bn1, layers.0.1, '
            "layers.1.1, ...)",
            "*only configuration text, attributes or class paths changed*accept it with "
            "`pytest --workload-snapshot --snapshot-update --workload-accept-upgrade`",
        )
    )
    # below max_depth=0: the descriptions of every module are stored, each distinct one once
    modules = json.loads(stored.read_text())["modules"]
    classes = sorted(d["class"].rsplit(".", 1)[-1] for d in modules.values())
    assert classes == ["BatchNorm2d", "Conv2d", "Norms", "Sequential", "Sequential"]


def test_accept_upgrade_rewrites_a_wording_only_change(pytester, suite):
    stored = _written(pytester, suite)
    stale = stored.with_name("test_gone.workloads")  # unused: a narrowed update deletes nothing
    stale.write_text(stored.read_text())
    _norms(suite, "m.variant = 'b'")
    accepted = pytester.runpytest(
        "--workload-snapshot", "--snapshot-update", "--workload-accept-upgrade"
    )
    accepted.assert_outcomes(passed=1)
    accepted.stdout.fnmatch_lines(
        lit(
            "*accepted a library upgrade in __workload_snapshots__*test_norms.workloads: 1 "
            "workload hash rewritten; parameters, children, inputs, FLOPs and computations "
            "unchanged"
        )
    )
    assert '"variant": "b"' in stored.read_text()
    assert stale.exists()
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=1)


def test_accept_upgrade_rewrites_a_class_moved_beside_a_reworded_attribute(pytester, suite):
    # the class path is left out of the structure hash; here the attribute moves the hash, and
    # the upgrade's comparison of the trees must leave the path out as well
    stored = _written(pytester, suite)
    _norms(suite, "m.variant = 'b'\n    Norms.__module__ = 'relocated'")
    accepted = pytester.runpytest(
        "--workload-snapshot", "--snapshot-update", "--workload-accept-upgrade"
    )
    accepted.assert_outcomes(passed=1)
    assert '"class_path": "relocated.Norms"' in stored.read_text()
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=1)


def test_accept_upgrade_refuses_a_changed_computation_and_leaves_the_file(pytester, suite):
    stored = _written(pytester, suite)
    before = stored.read_text()
    _norms(suite, "m.eps = 1e-3")
    refused = pytester.runpytest(
        "--workload-snapshot", "--snapshot-update", "--workload-accept-upgrade"
    )
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(
        lit(
            "*refusing to accept workload snapshot __workload_snapshots__*test_norms.workloads "
            "as a library upgrade*",
            "* (*Norms): computation changed (compute hash * -> *)",
            "*review the change, then accept it with "
            "`pytest --workload-snapshot --snapshot-update`",
        )
    )
    assert stored.read_text() == before


def test_accept_upgrade_refuses_changed_parameters(pytester, suite):
    suite(
        """
@pytest.mark.workloads
def test_net():
    Net(KERNEL).eval()(torch.rand(1, 3, 8, 8))
"""
    )
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    stored = pytester.path / "__workload_snapshots__" / "test_models" / "test_net.workloads"
    before = stored.read_text()
    suite(
        """
@pytest.mark.workloads
def test_net():
    Net(KERNEL).eval()(torch.rand(1, 3, 8, 8))
""",
        kernel=5,
    )
    refused = pytester.runpytest(
        "--workload-snapshot", "--snapshot-update", "--workload-accept-upgrade"
    )
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(
        lit(
            "* (*Net): parameters, buffers, children or train/eval mode changed",
            "* (*Net): FLOPs * -> *",
        )
    )
    assert stored.read_text() == before


def test_accept_upgrade_needs_the_gate(pytester, suite):
    _norms(suite)
    result = pytester.runpytest("--workload-accept-upgrade")
    result.stderr.fnmatch_lines(["*--workload-accept-upgrade needs --workload-snapshot*"])


def test_the_failure_names_the_library_versions_it_was_written_with(pytester, suite):
    stored = _written(pytester, suite)
    data = json.loads(stored.read_text())
    assert "torch" in data["libraries"]
    data["libraries"] = {"torch": "0.0.1", "timm": "0.0.2"}
    stored.write_text(json.dumps(data, indent=2))
    pytester.runpytest("--workload-snapshot").assert_outcomes(passed=1)  # versions alone pass
    _norms(suite, "m.variant = 'b'")
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*workload snapshot mismatch (__workload_snapshots__*test_norms.workloads):",
            f"  written with torch 0.0.1, timm 0.0.2; this run: torch {data_torch()}",
        )
    )


def data_torch() -> str:
    import importlib.metadata

    return importlib.metadata.version("torch")


def test_the_report_holds_every_description_once_also_from_xdist_workers(pytester, suite, mode):
    _norms(suite)
    pytester.runpytest("--workload-json=report.json", *mode).assert_outcomes(passed=1)
    report = json.loads((pytester.path / "report.json").read_text())
    (test,) = report["tests"]
    assert "modules" not in test and "torch" in test["libraries"]
    root = test["workloads"][0]["structure_hash"]
    assert root in report["modules"] and len(report["modules"]) == 5


def test_accept_upgrade_needs_snapshot_update(pytester, suite):
    _norms(suite)
    result = pytester.runpytest("--workload-snapshot", "--workload-accept-upgrade")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --workload-accept-upgrade needs --snapshot-update: syrupy writes what it "
            "rewrites; run `pytest --workload-snapshot --snapshot-update "
            "--workload-accept-upgrade`"
        ]
    )
