"""The README's and the documentation's shown outputs, produced by real runs: the quickstart
and the tutorial (each report, mismatch and accepted change they show), the failing examples,
the JSON report's fields and its input nodes; and every option the pages name exists.

What changes between machines and runs (hashes, timings, sample counts) is normalised;
everything else (structure, wording, counts, shapes, FLOPs, paths) must match.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import importlib.util
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

from pytest_workload import TestWorkloads
from pytest_workload._core.strict_json import load_json
from pytest_workload._fingerprint.describe import describe_args
from pytest_workload._snapshot.snapshot_files import snapshot_text

ROOT = Path(__file__).resolve().parent.parent
#: The README and every documentation page, by path from the repository root.
PAGES = {
    str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
}
#: Inner runs time briefly and judge no timing: the outputs compared here are normalised
#: timings, and a drift verdict would make the test depend on the machine's load.
INI = "[pytest]\nworkload_time_budget = 0.02\nworkload_perf = off\n"
SEP = re.compile(r"^[=-]{3,} .* [=-]{3,}$")
#: The quickstart's second call, which the pages tell the reader to change.
SECOND_CALL = "model(torch.rand(1, 3, 224, 224))"
#: In document order: a code block, or the sentence that changes the second call.
STEP = re.compile(r"```(python|text)\n(.*?)```|[Cc]hange the second call\s+to\s+`([^`]+)`", re.S)


def section(title: str) -> str:
    """The one section, in any page, whose heading starts with ``title``, down to the next
    heading of its level or above."""
    found = []
    for text in PAGES.values():
        for match in re.finditer(rf"^(#+) {re.escape(title)}", text, flags=re.M):
            level = len(match.group(1))
            end = re.compile(rf"^#{{1,{level}}} ", flags=re.M).search(text, match.end())
            found.append(text[match.start() : end.start() if end else len(text)])
    (text,) = found
    return text


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


@pytest.mark.parametrize(
    ("page", "title", "shown"),
    [
        ("README.md", "Quickstart", {"change": 1, "failure": 1}),
        ("docs/tutorial.md", "Tutorial", {"change": 1, "failure": 1, "report": 1}),
    ],
)
def test_the_quickstart_and_the_tutorial_run_as_shown(pytester, page, title, shown):
    """Each step in order: the test file, each shown run (passing, with the report it shows, or
    failing with the message it shows) and the change the text asks for."""
    text = section(title)
    assert text in PAGES[page]
    (code,) = blocks(text, "python")
    (path,) = re.findall(r"Save it as `([^`]+)`", text)
    (name,) = re.findall(r"^def (test_\w+)\(", code, flags=re.M)
    assert SECOND_CALL in code
    pytester.makeini(INI)
    (pytester.path / path).parent.mkdir(parents=True, exist_ok=True)
    checked = collections.Counter[str]()
    for step in STEP.finditer(text):
        language, body, changed = step.groups()
        if changed:
            code = code.replace(SECOND_CALL, changed, 1)
            checked["change"] += 1
        if language != "text":
            continue
        (pytester.path / path).write_text(code)
        for command, output in runs(body):
            assert command[0] == "pytest"
            result = pytester.runpytest(*command[1:], "-p", "no:xdist")
            if output and not SEP.match(output[0]):
                result.assert_outcomes(failed=1)
                assert normalise(shown_message(result.outlines, output)) == normalise(output)
                checked["failure"] += 1
                continue
            result.assert_outcomes(passed=1)
            if output:
                assert output[1] == f"{path}::{name}"
                actual = shown_section(result.outlines, "Workloads discovered")
                assert normalise(actual) == normalise(output)
                checked["report"] += 1
    assert checked == shown


def test_the_failing_examples_fail_as_shown():
    sessions = [
        b for text in PAGES.values() for b in blocks(text, "text") if "examples/failing/" in b
    ]
    assert sessions
    for session in sessions:
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


OPTION = re.compile(r"--(?:no-)?workload-[a-z-]*[a-z]")


@pytest.fixture
def known_options(pytester) -> set[str]:
    """Every option ``pytest --help`` lists, ``--no-...`` forms included."""
    return set(OPTION.findall("\n".join(pytester.runpytest("--help").outlines)))


def test_the_pages_name_only_options_that_exist(known_options):
    """An option renamed or removed in the code must not live on in a page."""
    named = {(page, flag) for page, text in PAGES.items() for flag in OPTION.findall(text)}
    assert {(page, flag) for page, flag in named if flag not in known_options} == set()


def test_the_generated_option_reference_lists_every_option(known_options, monkeypatch):
    """The MkDocs hook that writes the option reference, run without MkDocs."""
    spec = importlib.util.spec_from_file_location(
        "options_reference", ROOT / "docs" / "hooks" / "options_reference.py"
    )
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, hook)  # as MkDocs loads it: dataclasses need it
    spec.loader.exec_module(hook)
    generated = hook.options_markdown()
    assert set(OPTION.findall(generated)) == known_options
    assert "%%" not in generated and "(default:" not in generated


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
        text = path.read_text(encoding="utf-8")
        assert snapshot_text(TestWorkloads.from_snapshot(load_json(text))) == text, path
