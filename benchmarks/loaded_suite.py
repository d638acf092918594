"""Does the drift gate raise a false performance failure when a user's unchanged suite reruns on
a loaded machine?

Two projects are copied into a scratch directory: the repository's examples (``examples/``,
without ``examples/failing``) and a 20-test user suite written here (torch.nn MLPs, CNNs,
recurrent and attention blocks, and timm models, each test calling its model at one or two
shapes under ``@pytest.mark.workloads``). For each project:

1. snapshots and timing baselines are written with ``--workload-snapshot --snapshot-update
   --workload-perf=strict`` (strict: written even if the machine's own load, other people's
   jobs, which is never paused, made the timings wait) while the injected load is paused;
2. the unchanged project reruns ``--reruns`` times under ``--workload-snapshot`` (the gate as a
   user runs it, default options) while ``--busy`` spinning processes and ``--bursty``
   neighbours (10-500 ms of spinning, then 10-500 ms of sleep) compete for the cores and a
   stopper freezes the pytest process with SIGSTOP for 10-500 ms every 0.5-3 s.

Every failure of a rerun is a false alarm (nothing changed); the table splits them into
performance failures and others, and counts the drifts the gate reported as not judged. With
``--threads N`` a conftest sets ``torch.set_num_threads(N)`` in the pytest processes.

Run: ``python benchmarks/loaded_suite.py [--reruns 5 --busy 2 --bursty 2 --workdir DIR]
[--project examples|user_suite]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from _common import Load, markdown_table, print_header, stopper

REPO = Path(__file__).resolve().parent.parent

USER_SUITE = '''
"""A user's suite: 20 tests, each calling a model at one or two shapes."""

import pytest
import timm
import torch
from torch import nn

torch.set_grad_enabled(False)


def mlp(width, depth):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers).eval()


def cnn(channels):
    return nn.Sequential(
        nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
        nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 10),
    ).eval()


MLPS = [(64, 2), (128, 3), (256, 2), (512, 2), (1024, 1)]
CNNS = [8, 16, 32, 64]
TIMM = ["mobilenetv2_035", "resnet10t", "efficientnet_b0", "vit_tiny_patch16_224"]


@pytest.mark.workloads
@pytest.mark.parametrize("width,depth", MLPS)
def test_mlp(width, depth):
    model = mlp(width, depth)
    model(torch.rand(8, width))
    model(torch.rand(32, width))


@pytest.mark.workloads
@pytest.mark.parametrize("channels", CNNS)
def test_cnn(channels):
    cnn(channels)(torch.rand(2, 3, 32, 32))


@pytest.mark.workloads
@pytest.mark.parametrize("name", TIMM)
def test_timm(name):
    size = 224 if name.startswith("vit") else 64
    timm.create_model(name, pretrained=False).eval()(torch.rand(1, 3, size, size))


@pytest.mark.workloads
@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
def test_recurrent(kind):
    kind(32, 64, num_layers=2, batch_first=True).eval()(torch.rand(4, 16, 32))


@pytest.mark.workloads
def test_encoder_layer():
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True).eval()
    layer(torch.rand(2, 16, 64))


@pytest.mark.workloads
def test_attention():
    attention = nn.MultiheadAttention(64, 4, batch_first=True).eval()
    x = torch.rand(2, 16, 64)
    attention(x, x, x)


@pytest.mark.workloads
def test_embedding_bag():
    nn.EmbeddingBag(1000, 32).eval()(torch.randint(0, 1000, (8, 6)))


@pytest.mark.workloads
def test_conv1d():
    nn.Sequential(nn.Conv1d(8, 16, 5), nn.GELU(), nn.Conv1d(16, 16, 5)).eval()(
        torch.rand(4, 8, 256)
    )


@pytest.mark.workloads
def test_layer_norm_mlp():
    nn.Sequential(nn.LayerNorm(48), nn.Linear(48, 192), nn.GELU()).eval()(torch.rand(16, 48))
'''

THREADS_CONFTEST = "import torch\n\ntorch.set_num_threads({threads})\n"


@dataclass
class Run:
    project: str
    label: str
    tests: int
    failed: int
    perf_failed: int
    not_judged: int
    baselines: int
    took_s: float
    load_average: float


def junit_counts(path: Path) -> tuple[int, int, int]:
    """Tests, failures (errors included) and failures whose message is a performance regression."""
    root = ET.parse(path).getroot()
    tests = failed = perf = 0
    for case in root.iter("testcase"):
        tests += 1
        problems = [*case.findall("failure"), *case.findall("error")]
        if problems:
            failed += 1
            text = " ".join((p.get("message") or "") + (p.text or "") for p in problems)
            perf += "performance regression" in text
    return tests, failed, perf


def count_baselines(project: Path) -> int:
    return sum(1 for _ in (project / "__workload_baselines__").rglob("*.json"))


def run_pytest(project: Path, label: str, extra: list[str], load: Load | None) -> Run:
    xml = project / f"junit-{label}.xml"
    command = [
        # not -q: it hides the performance notes, where "not judged" drifts are counted
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
        "--workload-report=summary", "--workload-snapshot", f"--junitxml={xml}", *extra,
    ]  # fmt: skip
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, text=True)
    stalls = stopper(process.pid) if load is not None else None
    try:
        if load is None:
            output, _ = process.communicate()
        else:
            with load.running():
                output, _ = process.communicate()
    finally:
        if stalls is not None:
            stalls.terminate()
            stalls.wait()
    took = time.perf_counter() - started
    (project / f"output-{label}.txt").write_text(output)
    tests, failed, perf = junit_counts(xml)
    not_judged = len(re.findall(r"not judged", output))
    return Run(
        project.name, label, tests, failed, perf, not_judged, count_baselines(project), took,
        os.getloadavg()[0],
    )  # fmt: skip


#: The projects rerun, by their directory name in the workdir.
PROJECTS = ("examples", "user_suite")


def prepare(workdir: Path, threads: int | None) -> list[Path]:
    examples = workdir / "examples"
    shutil.copytree(
        REPO / "examples",
        examples,
        ignore=shutil.ignore_patterns("failing", "ci", "__workload_snapshots__", "__pycache__"),
    )
    suite = workdir / "user_suite"
    suite.mkdir()
    (suite / "test_user_suite.py").write_text(USER_SUITE)
    projects = [examples, suite]
    for project in projects:
        (project / "pytest.ini").write_text("[pytest]\n")
        if threads is not None:
            (project / "conftest.py").write_text(THREADS_CONFTEST.format(threads=threads))
    return projects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=5)
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--bursty", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads(N)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument(
        "--project", choices=PROJECTS, action="append", help="only these (default: both)"
    )
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="loaded-suite-"))
    if workdir.exists() and any(workdir.iterdir()):
        sys.exit(f"{workdir} is not empty")
    workdir.mkdir(parents=True, exist_ok=True)
    projects = [p for p in prepare(workdir, args.threads) if p.name in (args.project or PROJECTS)]
    load = Load(args.busy, args.bursty)
    runs: list[Run] = []
    started = time.perf_counter()
    try:
        for project in projects:
            update = ["--snapshot-update", "--workload-perf=strict"]
            runs.append(run_pytest(project, "baseline", update, None))
            for i in range(args.reruns):
                runs.append(run_pytest(project, f"loaded-{i + 1}", [], load))
                print(f"{project.name}: rerun {i + 1}/{args.reruns}", file=sys.stderr, flush=True)
    finally:
        load.close()
    report(args, runs, workdir, time.perf_counter() - started)


def report(args: argparse.Namespace, runs: list[Run], workdir: Path, took_s: float) -> None:
    print_header("Unchanged suites rerun on a loaded machine: false performance failures")
    print(
        f"Injected load on the reruns: {args.busy} busy, {args.bursty} bursty (10-500 ms), "
        f"stalls of the pytest process on; threads: "
        f"{args.threads if args.threads else 'torch default'}; {took_s:.0f} s in all; "
        f"outputs in {workdir}.\n"
    )
    rows = [
        [
            r.project, r.label, r.tests, r.failed, r.perf_failed, r.not_judged, r.baselines,
            f"{r.took_s:.1f} s", f"{r.load_average:.1f}",
        ]
        for r in runs
    ]  # fmt: skip
    headers = [
        "project", "run", "tests", "failed", "performance failures", "drifts not judged",
        "baselines on disk", "wall", "load average (1 min, at the end)",
    ]  # fmt: skip
    print(markdown_table(headers, rows))
    reruns = [r for r in runs if r.label != "baseline"]
    print(
        f"\nFalse failures over {len(reruns)} loaded reruns: "
        f"{sum(r.failed for r in reruns)} "
        f"({sum(r.perf_failed for r in reruns)} performance) "
        f"in {sum(r.tests for r in reruns)} test runs."
    )


if __name__ == "__main__":
    main()
