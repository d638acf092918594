"""Does the timing gate see extra compute and extra waiting where CI runs? Unpinned, end to end.

A generated pytest project times one workload in ``--copies`` parametrized copies (each copy a
workload of its own: an unused, numbered child module makes its hash differ): a forward of
about 5 ms, half a Linear stack (compute, on torch's intra-op pool where it has several
threads) and half a ``time.sleep`` (waiting). Baselines are written once, by an update run on
the machine as it is, on torch's default thread count. Then, per thread count (``default``:
torch's default, the README's quickstart; ``1``: the test module sets one thread) and per load,
nothing pinned:

- ``quiet``: nothing started beside the session;
- ``busy``: two spinning processes per core;
- ``pytest``: two other pytest sessions of the same project (gate off), started again as each
  ends;

the suite runs unchanged (every performance failure is a false alarm) and with each injection
in every forward: ``busy`` (a loop on the thread's CPU clock) and ``sleep`` (a ``time.sleep``),
each of 2x (3x slower) and 0.5x (+50%) the baselines' median time per call on their own clock
(compute and waits, without the waits for a core a loaded machine adds to the wall time).

It prints, per thread count and load, the gated runs of each suite, how many failed on
performance (with the Wilson 95% interval), how many timings the gate did not judge and the
load average before and after the session (other users of the machine count), and one
summary line counting the timings not judged.

Run: ``python benchmarks/gate_clock.py --copies 200 --injected-copies 100`` (the injections on
the first 100 copies; ``--package DIR`` times another checkout's ``pytest_workload``;
``--keep DIR`` keeps each session's JSON report and the baselines, to read why a copy failed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from _common import markdown_table, print_header, wilson_interval

PROJECT = '''
import json
import os
import time

import pytest
import torch
from torch import nn

INJECT = json.loads(os.environ.get("GATE_CLOCK_INJECT", "{{}}"))
if os.environ.get("GATE_CLOCK_THREADS") == "1":
    torch.set_num_threads(1)


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class Forward(nn.Module):
    """Linear layers (about 2 ms on one core), a sleep, and what ``INJECT`` adds."""

    def __init__(self, copy):
        super().__init__()
        self.layers = nn.Sequential(*(nn.Linear(512, 512) for _ in range({layers})))
        self.add_module(f"copy_{{copy}}", nn.Identity())

    def forward(self, x):
        time.sleep({sleep} + INJECT.get("sleep", 0.0))
        spin(INJECT.get("busy", 0.0))
        return self.layers(x)


@pytest.mark.workloads
@pytest.mark.parametrize("copy", range(int(os.environ.get("GATE_CLOCK_COPIES", {copies}))))
def test_forward(copy):
    torch.manual_seed(0)
    model = Forward(copy).eval()
    with torch.no_grad():
        model(torch.rand(64, 512))
'''

LOADS = ("quiet", "busy", "pytest")
THREADS = ("default", "1")
INJECTIONS = {
    "unchanged": {},
    "busy 3x": {"busy": 2.0},
    "busy +50%": {"busy": 0.5},
    "sleep 3x": {"sleep": 2.0},
    "sleep +50%": {"sleep": 0.5},
}


@dataclass
class Session:
    """One gated session: test runs, performance failures, timings the gate did not judge."""

    runs: int = 0
    perf_failures: int = 0
    other_failures: int = 0
    not_judged: int = 0
    timed: int = 0
    seconds: float = 0.0
    #: not judged, by why (the note's kind)
    why: dict[str, int] = field(default_factory=dict)


def write_project(root: Path, copies: int, layers: int, sleep: float) -> None:
    root.mkdir(parents=True, exist_ok=True)
    source = PROJECT.format(copies=copies, layers=layers, sleep=sleep)
    (root / "test_forward.py").write_text(source)
    (root / "pytest.ini").write_text("[pytest]\n")


def environment(
    package: Path, inject: dict[str, float], threads: str, copies: int | None = None
) -> dict[str, str]:
    env = dict(os.environ, GATE_CLOCK_INJECT=json.dumps(inject), GATE_CLOCK_THREADS=threads)
    if copies is not None:  # the first ``copies`` only
        env["GATE_CLOCK_COPIES"] = str(copies)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package), env.get("PYTHONPATH")]))
    env.pop("OMP_NUM_THREADS", None)
    return env


def pytest_command(root: Path, *args: str) -> list[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist"]
    return [*command, "-p", "no:cacheprovider", *args]


def session(
    root: Path,
    package: Path,
    inject: dict[str, float],
    threads: str,
    *args: str,
    keep: Path | None = None,
    copies: int | None = None,
) -> Session:
    report, junit = root / "report.json", root / "junit.xml"
    command = pytest_command(
        root, "--workload-snapshot", f"--junitxml={junit}", f"--workload-json={report}", *args
    )
    started = time.perf_counter()
    env = environment(package, inject, threads, copies)
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    result = Session(seconds=time.perf_counter() - started)
    if done.returncode not in (0, 1):
        sys.exit(f"pytest exited {done.returncode} in {root}:\n{done.stdout[-3000:]}")
    for case in ET.parse(junit).getroot().iter("testcase"):
        result.runs += 1
        failure = case.find("failure")
        if failure is None:
            continue
        text = (failure.get("message") or "") + (failure.text or "")
        if "performance regression" in text:
            result.perf_failures += 1
        else:
            result.other_failures += 1
    if keep is not None:
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(report, keep)
    data = json.loads(report.read_text())
    judged_out = {n["text"]: n["kind"] for n in data["notes"] if n["kind"].startswith("not judged")}
    result.not_judged = len(judged_out)
    for kind in judged_out.values():
        why = kind.removeprefix("not judged: ")
        result.why[why] = result.why.get(why, 0) + 1
    result.timed = sum(
        1
        for test in data["tests"]
        for w in test["workloads"]
        if w["parent"] is None and w.get("timing")
    )
    return result


def own_time(timing: dict[str, float]) -> float:
    """A replay's time per call without the waits for a core that a loaded machine adds to its
    wall time: its compute and its waits (before the two were judged apart, the ratio clock)."""
    return timing["ratio"] * timing["calibration_s"] + (timing.get("wait_s") or 0.0)


def baseline_median(root: Path) -> float:
    """The median of the copies' baseline times per call, on their own clock: an injection of
    2x it makes a forward 3x slower whatever the load the baselines were written under."""
    times = sorted(
        own_time(json.loads(p.read_text())["timing"])
        for p in (root / "__workload_baselines__").rglob("*.json")
    )
    return times[len(times) // 2]


SPINNER = "while True:\n    pass\n"


@contextmanager
def neighbours(load: str, project: Path, package: Path) -> Iterator[None]:
    """The load's processes, unpinned, for the block."""
    if load == "busy":
        count = 2 * (os.cpu_count() or 1)
        command = [sys.executable, "-c", SPINNER]
        processes = [subprocess.Popen(command) for _ in range(count)]
    elif load == "pytest":
        # each neighbour runs the project's suite (gate off) again and again
        loop = f"while true; do {' '.join(pytest_command(project, '-x'))} >/dev/null; done"
        env = environment(package, {}, "default")
        processes = [
            subprocess.Popen(["bash", "-c", loop], cwd=project, env=env, start_new_session=True)
            for _ in range(2)
        ]
    else:
        processes = []
    try:
        time.sleep(1.0)
        yield
    finally:
        for p in processes:
            if load == "pytest":
                os.killpg(p.pid, 9)
            else:
                p.kill()
            p.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20, help="copies of the test (20)")
    parser.add_argument("--injected-copies", type=int, help="of them, run with an injection (all)")
    parser.add_argument("--loads", default=",".join(LOADS), help="quiet,busy,pytest (all)")
    parser.add_argument("--threads", default=",".join(THREADS), help="default,1 (both)")
    parser.add_argument("--injections", default=",".join(INJECTIONS), help="all five")
    parser.add_argument("--layers", type=int, default=4, help="Linear(512, 512) layers (4)")
    parser.add_argument("--sleep", type=float, default=0.0025, help="seconds slept a call")
    parser.add_argument("--package", type=Path, default=Path.cwd(), help="whose plugin")
    parser.add_argument(
        "--keep", type=Path, help="copy each session's JSON report and the baselines here"
    )
    args = parser.parse_args(argv)
    print_header("gate_clock: extra compute and extra waiting, unpinned")
    print(f"`{' '.join(['python', *sys.argv])}`; package {args.package.resolve()}\n")
    project = Path(tempfile.mkdtemp(prefix="gate_clock_"))
    write_project(project, args.copies, args.layers, args.sleep)
    update = session(project, args.package, {}, "default", "--snapshot-update")
    median = baseline_median(project)
    if args.keep is not None:
        shutil.copytree(project / "__workload_baselines__", args.keep / "baselines")
    beside = Path(tempfile.mkdtemp(prefix="gate_clock_neighbour_"))
    write_project(beside, args.copies, args.layers, args.sleep)
    print(f"baselines: {update.runs} tests, median {median * 1e3:.2f} ms a call (own time)\n")
    rows, judged_out, timed = [], 0, 0
    for threads in args.threads.split(","):
        for load in args.loads.split(","):
            with neighbours(load, beside, args.package):
                for name in args.injections.split(","):
                    inject = {k: v * median for k, v in INJECTIONS[name].items()}
                    keep = args.keep and args.keep / f"{threads}-{load}-{name}-{len(rows)}.json"
                    before = os.getloadavg()[0]
                    copies = args.injected_copies if inject else None
                    s = session(project, args.package, inject, threads, keep=keep, copies=copies)
                    load_average = f"{before:.1f} -> {os.getloadavg()[0]:.1f}"
                    judged_out, timed = judged_out + s.not_judged, timed + s.timed
                    lo, hi = wilson_interval(s.perf_failures, s.runs)
                    rate = f"{s.perf_failures}/{s.runs} ({100 * lo:.0f}-{100 * hi:.0f}%)"
                    why = ", ".join(f"{n} {k}" for k, n in sorted(s.why.items()))
                    row = [threads, load, name, rate, why or 0, s.other_failures, load_average]
                    rows.append([*row, f"{s.seconds:.0f} s"])
                    print(" | ".join(str(c) for c in rows[-1]), flush=True)
    headers = ["threads", "load", "suite", "failed on timing (95% CI)", "not judged", "other"]
    headers.append("load average")
    print()
    print(markdown_table([*headers, "session"], rows))
    print(f"\nnot judged: {judged_out} of {timed} timed workloads")


if __name__ == "__main__":
    main()
