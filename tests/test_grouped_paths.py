"""End-to-end: identical layers are one row per distinct workload, with their paths compressed
in the report, the JSON and the snapshot, the same in every run and under xdist."""

from __future__ import annotations

import json

import pytest

from tests.pytester_suite import SUITE_INI, lit

WIDE = """
import pytest
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(BLOCKS)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


@pytest.mark.workloads(max_depth=2)
def test_wide():
    model = Wide().eval()
    for _ in range(3):
        model(torch.rand(2, 4))
"""


@pytest.fixture
def wide(pytester: pytest.Pytester):
    pytester.makeini(SUITE_INI)

    def write(blocks: int = 10) -> None:
        pytester.makepyfile(test_wide=WIDE.replace("BLOCKS", str(blocks)))

    return write


def _stored(pytester: pytest.Pytester):
    return pytester.path / "__workload_snapshots__" / "test_wide" / "test_wide.workloads"


def test_identical_layers_are_one_row_each_in_the_report_json_and_snapshot(pytester, wide, mode):
    wide()
    first = pytester.runpytest(
        *mode, "-v", "--workload-snapshot", "--snapshot-update", "--workload-json=r.json"
    )
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(
        lit(
            "    model (executed 3× – *",
            "            blocks.[0-9] (executed 30× – *",
            "                    blocks.[0-9].layers.[0-2] (executed 90× – *",
        )
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["schema_version"] == 1
    rows = [
        (w["name"], w["paths"], w["calls"], w["caller"], w["timing"]["n"] if w["depth"] else None)
        for w in report["tests"][0]["workloads"]
    ]
    # (timed from the third call: the first two are traced)
    assert rows == [
        ("model", ["model"], 3, None, None),
        ("blocks.0", ["blocks.[0-9]"], 30, 0, 10),
        ("blocks.0.layers.0", ["blocks.[0-9].layers.[0-2]"], 90, 1, 30),
    ]
    stored = _stored(pytester).read_text()
    snapshot = json.loads(stored)
    assert snapshot["pytest_workload_snapshot"] == 1
    assert [(e["name"], e["paths"]) for e in snapshot["workloads"]] == [
        (name, paths) for name, paths, *_ in rows
    ]
    assert '      "paths": ["blocks.[0-9].layers.[0-2]"],' in stored.splitlines()

    again = pytester.runpytest(
        *mode, "--workload-snapshot", "--snapshot-update", "--workload-json=r2.json"
    )
    again.assert_outcomes(passed=1)
    assert _stored(pytester).read_text() == stored  # unchanged: not rewritten
    rerun = json.loads((pytester.path / "r2.json").read_text())["tests"][0]["workloads"]
    assert [(w["name"], w["paths"], w["calls"]) for w in rerun] == [r[:3] for r in rows]
    summary = pytester.runpytest(*mode, "--workload-snapshot", "--workload-report=summary")
    summary.assert_outcomes(passed=1)
    summary.stdout.fnmatch_lines(["*recorded 3 workloads (1 top-level, 3 distinct hashes*"])


def test_a_layer_more_of_the_same_kind_fails_naming_the_paths(pytester, wide):
    wide(10)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    wide(11)
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "  changed:  blocks.[0-10] (test_wide.Block) * -> *",
            "      paths blocks.[0-9] -> blocks.[0-10]",
            "  changed:  blocks.[0-10].layers.[0-2] (torch.nn.modules.linear.Linear) * -> *",
            "      paths blocks.[0-9].layers.[0-2] -> blocks.[0-10].layers.[0-2]",
        )
    )
