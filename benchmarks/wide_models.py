"""What does recording a wide model cost? Thousands of submodules at ``max_depth=2``.

A model of ``B`` blocks, each an ``nn.Sequential`` of ``L`` ``nn.Linear(4, 4)``, has
``B + B * L`` submodules, all at depth 1 or 2, so ``max_depth=2`` records every one of them. One
test calls it three times on one input, and runs in a fresh ``python -m pytest`` subprocess two
ways, alternately, ``--rounds`` times:

* **bare**: ``-p no:workload``;
* **recorded**: ``@pytest.mark.workloads(max_depth=2)`` under ``--workload-snapshot
  --snapshot-update --workload-json=PATH`` (timing on, the default: one replay of the root).

Per run: the test's wall time (JUnit ``time``: setup, call, and the plugin's work after the
body), each forward's wall time as the test saw it, the process's peak RSS
(``ru_maxrss`` at the end of the session), and the sizes of the JSON report and of the snapshot
file. Ratios are per round, recorded over bare.

Target (issue 14): at most 2x the bare test time at depth 2 for 5,000 and 50,000 submodules,
cost linear in the submodules that ran, memory overhead bounded.

Run: ``python benchmarks/wide_models.py [--sizes 5000 50000] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, median, print_header

#: (blocks, layers per block) for a number of submodules
SHAPES = {5_000: (50, 99), 50_000: (200, 249)}

TEST = """
import json, time
import pytest
import torch
from torch import nn

BLOCKS, LAYERS = {blocks}, {layers}


@pytest.mark.workloads(max_depth=2)
def test_wide():
    torch.manual_seed(0)
    model = nn.Sequential(
        *[nn.Sequential(*[nn.Linear(4, 4) for _ in range(LAYERS)]) for _ in range(BLOCKS)]
    ).eval()
    x = torch.rand(1, 4)
    calls = []
    with torch.no_grad():
        for _ in range(3):
            start = time.perf_counter()
            model(x)
            calls.append(time.perf_counter() - start)
    with open("calls.json", "w") as f:
        json.dump(calls, f)
"""

CONFTEST = """
import json, resource


def pytest_unconfigure(config):
    with open("rss.json", "w") as f:
        json.dump(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, f)
"""


@dataclass
class Side:
    test_s: list[float] = field(default_factory=list)
    calls_s: list[list[float]] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    json_bytes: int = 0
    snapshot_bytes: int = 0
    exit_codes: list[int] = field(default_factory=list)


def _suite(root: Path, submodules: int) -> Path:
    blocks, layers = SHAPES[submodules]
    suite = root / f"wide_{submodules}"
    suite.mkdir()
    (suite / "test_wide.py").write_text(textwrap.dedent(TEST.format(blocks=blocks, layers=layers)))
    (suite / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (suite / "pytest.ini").write_text("[pytest]\n")
    return suite


def _run(suite: Path, side: Side, recorded: bool, threads: int) -> None:
    junit = suite / "junit.xml"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    args += ["-p", "no:xdist", f"--junitxml={junit}", "test_wide.py"]
    if recorded:
        args += ["--workload-snapshot", "--snapshot-update", "--workload-json=report.json"]
    else:
        args += ["-p", "no:workload"]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    result = subprocess.run(args, cwd=suite, capture_output=True, text=True, env=env)
    side.exit_codes.append(result.returncode)
    if result.returncode != 0:
        print(result.stdout[-3000:], result.stderr[-3000:])
    case = next(ET.parse(junit).getroot().iter("testcase"))
    side.test_s.append(float(case.get("time", "nan")))
    side.calls_s.append(json.loads((suite / "calls.json").read_text()))
    side.rss.append(json.loads((suite / "rss.json").read_text()))
    if recorded:
        side.json_bytes = (suite / "report.json").stat().st_size
        snapshots = list((suite / "__workload_snapshots__").rglob("*"))
        side.snapshot_bytes = sum(p.stat().st_size for p in snapshots if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=sorted(SHAPES), choices=SHAPES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of the tests")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="wide-models-") as tmp:
        for size in args.sizes:
            suite = _suite(Path(tmp), size)
            bare, recorded = Side(), Side()
            for r in range(args.rounds):
                order = [(bare, False), (recorded, True)]
                for side, rec in order if r % 2 == 0 else order[::-1]:
                    _run(suite, side, rec, args.threads)
                print(f"{size} submodules: round {r + 1}/{args.rounds} done", flush=True)
            ratios = [s / b for s, b in zip(recorded.test_s, bare.test_s, strict=True)]
            for name, side in (("bare", bare), ("recorded", recorded)):
                calls = [median([c[i] for c in side.calls_s]) for i in range(3)]
                rows.append(
                    [
                        f"{size:,}",
                        name,
                        f"{median(side.test_s):.2f} s",
                        " / ".join(f"{c:.2f}" for c in calls) + " s",
                        f"{median(side.rss) / 2**20:.0f} MiB",
                        f"{side.json_bytes / 2**20:.2f} MiB" if side is recorded else "",
                        f"{side.snapshot_bytes / 2**10:.0f} KiB" if side is recorded else "",
                        f"{median(ratios):.2f}x" if side is recorded else "",
                        ",".join(map(str, sorted(set(side.exit_codes)))),
                    ]
                )
    print_header("Wide models: max_depth=2, three calls, recorded vs bare")
    print(
        f"{args.rounds} rounds, alternated; fresh pytest processes; OMP_NUM_THREADS="
        f"{args.threads}. Test time: JUnit time of the test (body plus the plugin's work after "
        "it). Calls: median wall time of each of the three forwards.\n"
    )
    headers = ["submodules", "side", "test time", "calls 1 / 2 / 3", "peak RSS", "JSON"]
    headers += ["snapshot", "ratio (test time)", "exit"]
    print(markdown_table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
