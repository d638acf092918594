"""The README's shown outputs, produced by real runs: the quickstart's report, the snapshot
mismatch, the failing examples, the JSON report's fields and its input nodes.

What changes between machines and runs (hashes, timings, sample counts) is normalised;
everything else (structure, wording, counts, shapes, FLOPs, paths) must match.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import timm  # noqa: F401 (imported once here, so inner runs do not import it again)
import torch
from torchvision.models.detection.image_list import ImageList

from pytest_workload._fingerprint.describe import describe_args
from pytest_workload._snapshot.document import SnapshotDocument

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: Inner runs time briefly and judge no timing: the outputs compared here are normalised
#: timings, and a drift verdict would make the test depend on the machine's load.
INI = "[pytest]\nworkload_time_budget = 0.02\nworkload_perf = off\n"
SEP = re.compile(r"^[=-]{3,} .* [=-]{3,}$")


def section(title: str) -> str:
    """The README section whose heading starts with ``title``."""
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end >= 0 else len(README)]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def runs(block: str) -> list[tuple[list[str], list[str]]]:
    """A shown session: each ``$ pytest ...`` command with the lines shown after it."""
    shown: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            shown.append((shlex.split(line[2:], comments=True), []))
        elif line.strip():
            shown[-1][1].append(line)
    return shown


def normalise(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        line = re.sub(r"\b[0-9a-f]{8,64}\b", "<hex>", line)
        line = re.sub(r"\d+(?:\.\d+)? (?:µs|ms|s)\b", "<time>", line)
        # an interval is shown only where the run took enough samples, which the machine decides
        line = line.replace(", 95% CI <time>–<time>", "")
        out.append(re.sub(r"\bn=\d+", "n=<n>", line))
    return out


def shown_section(stdout: list[str], title: str) -> list[str]:
    """The lines of one terminal section, without blank lines."""
    start = next(i for i, line in enumerate(stdout) if SEP.match(line) and f" {title} " in line)
    lines = [stdout[start]]
    for line in stdout[start + 1 :]:
        if SEP.match(line):
            break
        if line.strip():
            lines.append(line)
    return lines


def shown_message(stdout: list[str], expected: list[str]) -> list[str]:
    """The lines of a failure message that starts as ``expected`` does."""
    head = expected[0].split(" ")[0:3]
    start = next(i for i, line in enumerate(stdout) if line.split(" ")[0:3] == head)
    return stdout[start : start + len(expected)]


def test_quickstart_and_the_mismatch_run_as_shown(pytester):
    quickstart = section("Quickstart")
    (code,) = blocks(quickstart, "python")
    (session,) = blocks(quickstart, "text")
    shown = runs(session)
    nodeid = shown[-1][1][1]
    path, name = nodeid.split("::")
    assert f"def {name}(" in code and f"Save it as `{path}`" in quickstart
    pytester.makeini(INI)
    (pytester.path / path).parent.mkdir(parents=True, exist_ok=True)
    (pytester.path / path).write_text(code)
    for command, output in shown:
        assert command[0] == "pytest"
        result = pytester.runpytest(*command[1:], "-p", "no:xdist")
        result.assert_outcomes(passed=1)
        if output:
            actual = shown_section(result.outlines, "Workloads discovered")
            assert normalise(actual) == normalise(output)

    gate = section("The snapshot gate")
    (changed,) = re.findall(r"second call changed\s+to `([^`]+)`", gate)
    (mismatch,) = [b for b in blocks(gate, "text") if "workload snapshot mismatch" in b]
    ((command, output),) = runs(mismatch)
    (pytester.path / path).write_text(code.replace("model(torch.rand(1, 3, 224, 224))", changed, 1))
    result = pytester.runpytest(*command[1:], "-p", "no:xdist")
    result.assert_outcomes(failed=1)
    assert normalise(shown_message(result.outlines, output)) == normalise(output)


def test_the_failing_examples_fail_as_shown():
    hooks = section("Your own keys: hooks")
    (session,) = [b for b in blocks(hooks, "text") if "examples/failing/" in b]
    for command, output in runs(session):
        result = subprocess.run(
            [sys.executable, "-m", *command, "-p", "no:xdist", "-p", "no:cacheprovider"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 1, result.stdout + result.stderr
        actual = shown_message(result.stdout.splitlines(), output)
        assert normalise(actual) == normalise(output)


JSON_SUITE = """
import numpy as np
import pytest
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(4, 4)

    def forward(self, x, scale):
        return self.stem(x) * float(scale)


@pytest.mark.workloads(max_depth=1)
def test_net():
    Net()(torch.rand(1, 4), np.float64(2.0))
"""
#: Fields whose values are input nodes or open-ended maps: their own keys are not fields.
OPEN = {"input_signature", "key", "output_signature", "submodules", "modules", "libraries", "ops"}


def fields(value: object, path: str = "") -> set[str]:
    if isinstance(value, dict) and path.rsplit(".", 1)[-1] not in OPEN:
        found = set()
        for k, v in value.items():
            found |= {f"{path}.{k}".lstrip(".")} | fields(v, f"{path}.{k}".lstrip("."))
        return found
    if isinstance(value, list) and path.rsplit(".", 1)[-1] not in OPEN:
        return set().union(*(fields(v, f"{path}[]") for v in value))
    return set()


def test_the_json_schema_lists_every_field_the_report_has(pytester):
    schema = section("JSON report (`--workload-json`)")
    (example,) = blocks(schema, "json")
    pytester.makeini(INI)
    pytester.makepyfile(test_json=JSON_SUITE)
    pytester.runpytest("--workload-json=report.json", "-p", "no:xdist").assert_outcomes(passed=1)
    written = json.loads((pytester.path / "report.json").read_text())
    assert fields(json.loads(example)) == fields(written)


class Colour(enum.Enum):
    RED = 1


@dataclasses.dataclass
class Options:
    depth: int


Pair = collections.namedtuple("Pair", "a b")


class _Subclass(torch.Tensor):
    pass


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor, torch.quantize_per_channel")
def test_the_json_schema_lists_every_input_node():
    schema = section("JSON report (`--workload-json`)")
    listed = schema[schema.index("Input nodes:") :]
    tags = set(re.findall(r'"(\w+)"', listed))

    def custom(value: object) -> object:
        return {"id": value.hex()} if isinstance(value, bytes) else None

    values = (
        torch.rand(2, 3),
        torch.rand(2, 2).to_sparse(),
        np.zeros((2, 3)),
        np.float64(1.5),
        1 + 2j,
        (1, 2),
        {"a": 1},
        Pair(1, 2),
        Options(3),
        Colour.RED,
        torch.float16,
        torch.device("cpu"),
        float("nan"),
        b"\x01",
        ImageList(torch.rand(1, 3, 4, 4), [(4, 4)]),
        "x" * 2000,
        torch.Size([2, 3]),
        torch.quantize_per_channel(
            torch.rand(2, 3), torch.ones(3), torch.zeros(3, dtype=torch.long), 1, torch.quint8
        ),
        torch.zeros(2).as_subclass(_Subclass),
    )
    written: set[str] = set()

    def collect(node: object) -> None:
        if isinstance(node, dict):
            written.update(node)
            for v in node.values():
                collect(v)
        elif isinstance(node, list):
            for v in node:
                collect(v)

    for node in describe_args(values, custom):
        collect(node)
    # field names and values of the values above, not node tags
    nested = {"a", "b", "depth", "id", "tensors", "image_sizes", "any", "nan", "inf"}
    assert written - nested == tags - nested


def test_the_committed_example_snapshots_hold_every_field():
    """Regenerated with the current code: a stale example would explain a dtype change as a
    structure change."""
    stored = sorted((ROOT / "examples").rglob("*.workloads"))
    assert stored
    for path in stored:
        document = SnapshotDocument.from_text(path.read_text(encoding="utf-8"))
        assert document.to_text() == path.read_text(encoding="utf-8"), path
