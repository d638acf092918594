"""Does the timing gate hold under load? False alarms and detection, per load, end to end.

A generated pytest project runs four models (an MLP, a small CNN, mobilenetv2_035 at
1x3x96x96, resnet18 at 1x3x224x224; about 20 us to 40 ms a forward on one core), each in
``--copies`` parametrized copies, each copy a workload of its own (an unused, numbered child
module makes its hash differ), so one session is ``4 * copies`` gated test runs. Baselines are
written once by an update run on the quiet machine. Then, under each load:

- an update run in a scratch copy of the project: how many baselines it wrote (all, the goal);
- the unchanged suite: every performance failure is a false alarm;
- the suite with a pure time regression injected, +30% and +50%: a busy loop on this thread's
  CPU clock in each forward, for that share of the model's baseline median;
- the suite with a copy injected (``.contiguous()`` of the permuted input in each forward): the
  snapshot gate must fail every test on its costs, naming bytes moved and peak memory.

``--injections`` selects among ``slow`` and ``copy`` (both by default).

Loads, on the CPUs of ``--cpus`` (the script and everything it starts are pinned to them):
``quiet``; ``busy``, two spinning processes per CPU; ``bursty``, two processes per CPU that
alternate about 100 ms busy and 100 ms idle at random phases; ``quota``, the pytest session in a
cgroup v1 CPU quota of ``--quota`` of one CPU (skipped, with one line, where that cannot be
set up). Torch runs one intra-op thread per CPU given.

It prints, per load, the gated runs, false alarms with their Wilson 95% upper bound, the
detection rates, and, computed offline from the per-test ratios and intervals of the JSON
reports (without the gate's re-timing, so a lower bound of what the gate catches), false
alarms and detection at tolerances 10%, 15%, 20%, 30% and 50%.

Run: ``python benchmarks/gate_loads.py --cpus 1 [--quick]`` (as root for the quota load).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
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

TOLERANCES = (0.1, 0.15, 0.2, 0.3, 0.5)
REGRESSIONS = (0.3, 0.5)

PROJECT = '''
import json
import os
import time

import pytest
import timm
import torch
from torch import nn

SLOW = json.loads(os.environ.get("GATE_LOADS_SLOW", "{{}}"))
COPY = os.environ.get("GATE_LOADS_COPY") == "1"
COPIES = {copies}


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class Tagged(nn.Module):
    """A model, slowed by ``SLOW[name]`` seconds a call; ``copy`` numbers its workload."""

    def __init__(self, name, model, copy):
        super().__init__()
        self.name, self.model = name, model
        self.add_module(f"copy_{{copy}}", nn.Identity())

    def forward(self, x):
        spin(SLOW.get(self.name, 0.0))
        if COPY:  # a contiguous copy of a permuted activation: same values, more bytes moved
            x = x.transpose(0, -1).contiguous().transpose(0, -1)
        return self.model(x)


def mlp():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), (4, 32)


def cnn():
    layers = [nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
    layers += [nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1)]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(32, 10)), (1, 3, 64, 64)


def mobilenet():
    return timm.create_model("mobilenetv2_035", pretrained=False), (1, 3, 96, 96)


def resnet():
    return timm.create_model("resnet18", pretrained=False), (1, 3, 224, 224)


@pytest.mark.workloads
@pytest.mark.parametrize("copy", range(COPIES))
@pytest.mark.parametrize("build", [mlp, cnn, mobilenet, resnet], ids=lambda b: b.__name__)
def test_model(build, copy):
    torch.manual_seed(0)
    model, shape = build()
    model = Tagged(build.__name__, model, copy).eval()
    with torch.no_grad():
        model(torch.rand(*shape))
'''


@dataclass
class Session:
    """One pytest session's outcome: failed tests by kind, and per-test calibrated ratios."""

    runs: int = 0
    perf_failures: int = 0
    #: failures of the snapshot gate that name the bytes moved and the peak memory, old -> new
    cost_failures: int = 0
    other_failures: int = 0
    #: test id -> (ratio current/baseline, low, high), from the reports
    ratios: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    #: ids of the tests that failed on performance
    perf_failed: list[str] = field(default_factory=list)
    baselines: int = 0
    seconds: float = 0.0


def write_project(root: Path, copies: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "test_models.py").write_text(PROJECT.format(copies=copies))
    (root / "pytest.ini").write_text("[pytest]\n")


def pytest_session(
    root: Path,
    args: list[str],
    slow: dict[str, float],
    cgroup: Path | None,
    threads: int,
    copy: bool = False,
) -> Session:
    env = dict(os.environ, GATE_LOADS_SLOW=json.dumps(slow), OMP_NUM_THREADS=str(threads))
    env["GATE_LOADS_COPY"] = "1" if copy else "0"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path.cwd()), env.get("PYTHONPATH")]))
    report, junit = root / "report.json", root / "junit.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist"]
    command += ["-p", "no:cacheprovider", "--workload-snapshot", f"--junitxml={junit}"]
    command += [f"--workload-json={report}", *args]

    def enter_cgroup() -> None:
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, preexec_fn=enter_cgroup
    )
    session = Session(seconds=time.perf_counter() - started)
    if done.returncode not in (0, 1):
        sys.exit(f"pytest exited {done.returncode} in {root}:\n{done.stdout[-3000:]}")
    for case in ET.parse(junit).getroot().iter("testcase"):
        session.runs += 1
        failure = case.find("failure")
        if failure is not None:
            text = (failure.get("message") or "") + (failure.text or "")
            if all(s in text for s in ("computation changed", "bytes written", "peak memory")):
                session.cost_failures += 1
            elif "performance regression" in text:
                session.perf_failures += 1
                session.perf_failed.append(case.get("name", ""))
            else:
                session.other_failures += 1
    session.ratios = calibrated_ratios(root, report)
    session.baselines = len(list((root / "__workload_baselines__").rglob("*.json")))
    return session


def calibrated_ratios(root: Path, report: Path) -> dict[str, tuple[float, float, float]]:
    """Per test: current over baseline calibrated ratio and its conservative interval."""
    stored = {}
    for path in (root / "__workload_baselines__").rglob("*.json"):
        data = json.loads(path.read_text())
        stored[data["test"], data["hash"]] = data["timing"]
    out = {}
    for test in json.loads(report.read_text())["tests"]:
        for w in test["workloads"]:
            timing, base = w.get("timing"), stored.get((test["nodeid"], w["hash"]))
            if w["parent"] is not None or not timing or not base or timing["ratio"] is None:
                continue
            (low, high), (base_low, base_high) = timing["ratio_ci95"], base["ratio_ci95"]
            ratio = timing["ratio"] / base["ratio"]
            out[test["nodeid"]] = (ratio, low / base_high, high / base_low)
    return out


# -- loads -------------------------------------------------------------------------------------

SPINNER = """
import os, random, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
bursty = sys.argv[2] == "bursty"
random.seed(int(sys.argv[3]))
time.sleep(random.uniform(0, 0.2))
while True:
    end = time.perf_counter() + (random.uniform(0.05, 0.15) if bursty else 3600)
    while time.perf_counter() < end:
        pass
    time.sleep(random.uniform(0.05, 0.15))
"""


@contextmanager
def neighbours(kind: str, cpus: list[int], seed: int) -> Iterator[None]:
    processes = [
        subprocess.Popen([sys.executable, "-c", SPINNER, str(cpu), kind, str(seed + i)])
        for i, cpu in enumerate(cpu for cpu in cpus for _ in range(2))
    ]
    try:
        time.sleep(0.5)
        yield
    finally:
        for p in processes:
            p.send_signal(signal.SIGKILL)
            p.wait()


def quota_cgroup(share: float) -> tuple[Path | None, str]:
    """A cgroup v1 CPU quota of ``share`` of one CPU, or None and why not."""
    path = Path(f"/sys/fs/cgroup/cpu/gate_loads_{os.getpid()}")
    try:
        path.mkdir()
        (path / "cpu.cfs_period_us").write_text("100000")
        (path / "cpu.cfs_quota_us").write_text(str(int(100000 * share)))
    except OSError as exc:
        return None, f"quota: skipped, a cgroup v1 CPU quota cannot be set here ({exc})"
    return path, ""


# -- the run -----------------------------------------------------------------------------------


@dataclass
class LoadResult:
    name: str
    update_baselines: int = 0
    expected_baselines: int = 0
    unchanged: Session = field(default_factory=Session)
    regressed: dict[float, Session] = field(default_factory=dict)
    copied: Session | None = None


def run_load(
    name: str, project: Path, slow_of: dict[float, dict[str, float]], args: argparse.Namespace
) -> LoadResult | str:
    cgroup = None
    if name == "quota":
        cgroup, why = quota_cgroup(args.quota)
        if cgroup is None:
            return why
    result = LoadResult(name, expected_baselines=4 * args.copies)
    threads = len(args.cpus)
    try:
        with neighbours(name, args.cpus, args.seed) if name in ("busy", "bursty") else _nothing():
            scratch = Path(tempfile.mkdtemp(prefix=f"gate_loads_{name}_"))
            write_project(scratch, args.copies)
            update = pytest_session(scratch, ["--snapshot-update"], {}, cgroup, threads)
            result.update_baselines = update.baselines
            shutil.rmtree(scratch)
            result.unchanged = pytest_session(project, [], {}, cgroup, threads)
            for share, slow in slow_of.items():
                result.regressed[share] = pytest_session(project, [], slow, cgroup, threads)
            if args.copy:
                result.copied = pytest_session(project, [], {}, cgroup, threads, copy=True)
    finally:
        if cgroup is not None:
            cgroup.rmdir()
    return result


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def model_medians(project: Path) -> dict[str, float]:
    """Each model's baseline median, keyed as the project's ``SLOW`` reads it."""
    medians: dict[str, list[float]] = {}
    report = json.loads((project / "report.json").read_text())
    stored = {}
    for path in (project / "__workload_baselines__").rglob("*.json"):
        data = json.loads(path.read_text())
        stored[data["test"], data["hash"]] = data["timing"]["median_s"]
    for test in report["tests"]:
        build = model_of(test["nodeid"])
        for w in test["workloads"]:
            key = (test["nodeid"], w["hash"])
            if w["parent"] is None and key in stored:
                medians.setdefault(build, []).append(stored[key])
    return {k: sorted(v)[len(v) // 2] for k, v in medians.items()}


def upper(x: int, n: int) -> str:
    return f"{100 * wilson_interval(x, n)[1]:.1f}%"


def report(results: list[LoadResult], skipped: list[str], args: argparse.Namespace) -> None:
    rows = []
    total_runs = total_false = 0
    for r in results:
        u = r.unchanged
        total_runs += u.runs
        total_false += u.perf_failures
        detection = [
            f"{s.perf_failures}/{s.runs} ({100 * s.perf_failures / max(s.runs, 1):.0f}%)"
            for s in r.regressed.values()
        ]
        if r.copied is not None:
            detection.append(f"{r.copied.cost_failures}/{r.copied.runs}")
        rows.append(
            [
                r.name,
                f"{r.update_baselines}/{r.expected_baselines}",
                u.runs,
                u.perf_failures,
                f"{100 * u.perf_failures / max(u.runs, 1):.1f}%",
                upper(u.perf_failures, u.runs),
                *detection,
                u.other_failures
                + sum(s.other_failures for s in r.regressed.values())
                + (r.copied.other_failures + r.copied.perf_failures if r.copied else 0),
                f"{u.seconds:.0f} s",
            ]
        )
    headers = ["load", "baselines written (update run)", "gated runs", "false alarms", "rate"]
    headers += ["Wilson 95% upper", *(f"+{s:.0%} caught" for s in args.regressions)]
    headers += ["copy failed on its costs"] if args.copy else []
    headers += ["other failures", "unchanged session took"]
    print(markdown_table(headers, rows))
    print(
        f"\noverall: {total_false}/{total_runs} false alarms "
        f"({100 * total_false / max(total_runs, 1):.2f}%, Wilson 95% upper "
        f"{upper(total_false, total_runs)})"
    )
    for line in skipped:
        print(line)
    print("\nOffline, from the reports' ratios (no re-timing): false alarms / +30% / +50% caught")
    curve = []
    for r in results:
        cells = [r.name]
        for tolerance in TOLERANCES:
            counts = [_offline(r.unchanged, tolerance)]
            counts += [_offline(s, tolerance) for s in r.regressed.values()]
            cells.append(" / ".join(f"{x}/{n}" for x, n in counts))
        curve.append(cells)
    print(markdown_table(["load", *(f"tolerance {t:.0%}" for t in TOLERANCES)], curve))
    print("\nBy model: false alarms / " + " / ".join(f"+{s:.0%}" for s in args.regressions))
    print(markdown_table(["load", *MODELS], [by_model(r) for r in results]))


MODELS = ("mlp", "cnn", "mobilenet", "resnet")


def model_of(test: str) -> str:
    return test.split("[", 1)[1].split("-", 1)[0]


def by_model(r: LoadResult) -> list[str]:
    sessions = [r.unchanged, *r.regressed.values()]
    cells = [r.name]
    for model in MODELS:
        counts = []
        for s in sessions:
            runs = sum(model_of(t) == model for t in s.ratios)
            counts.append(f"{sum(model_of(t) == model for t in s.perf_failed)}/{runs}")
        cells.append(" / ".join(counts))
    return cells


def dump(results: list[LoadResult], path: Path) -> None:
    """Every session's per-test ratios and performance failures, for analysis."""
    data = {
        r.name: {
            name: {"ratios": s.ratios, "perf_failed": s.perf_failed}
            for name, s in [("unchanged", r.unchanged)]
            + [(f"+{k:.0%}", v) for k, v in r.regressed.items()]
        }
        for r in results
    }
    path.write_text(json.dumps(data, indent=1))


def _offline(s: Session, tolerance: float) -> tuple[int, int]:
    limit = 1 + tolerance
    fails = sum(r > limit and low > limit for r, low, _ in s.ratios.values())
    return fails, len(s.ratios)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", type=lambda v: [int(c) for c in v.split(",")], default=None)
    parser.add_argument("--quick", action="store_true", help="3 copies; loads quiet and busy")
    parser.add_argument("--copies", type=int, default=None, help="copies of each test (50)")
    parser.add_argument("--loads", default=None, help="quiet,busy,bursty,quota (all)")
    parser.add_argument("--quota", type=float, default=0.5, help="the quota, of one CPU")
    parser.add_argument("--injections", default="slow,copy", help="slow,copy (both)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="build the project here, keep it")
    parser.add_argument("--dump", type=Path, default=None, help="write per-test ratios here")
    args = parser.parse_args(argv)
    # a timeout's SIGTERM runs the cleanups too: no spinner or cgroup outlives the run
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args.cpus = args.cpus or sorted(os.sched_getaffinity(0))
    args.copies = args.copies or (3 if args.quick else 50)
    injections = args.injections.split(",")
    args.regressions = REGRESSIONS if "slow" in injections else ()
    args.copy = "copy" in injections
    loads = (args.loads or ("quiet,busy" if args.quick else "quiet,busy,bursty,quota")).split(",")
    os.sched_setaffinity(0, set(args.cpus))
    random.seed(args.seed)

    load_average = Path("/proc/loadavg").read_text().split()[:3]
    project = args.keep or Path(tempfile.mkdtemp(prefix="gate_loads_"))
    write_project(project, args.copies)
    started = time.perf_counter()
    update = pytest_session(project, ["--snapshot-update"], {}, None, len(args.cpus))
    medians = model_medians(project)
    print(
        f"baselines: {update.baselines}/{4 * args.copies} written on the quiet machine in "
        f"{update.seconds:.0f} s; model medians: "
        + ", ".join(f"{k} {1e3 * v:.3f} ms" for k, v in medians.items()),
        flush=True,
    )
    slow_of = {s: {k: s * v for k, v in medians.items()} for s in args.regressions}
    results, skipped = [], []
    for name in loads:
        outcome = run_load(name, project, slow_of, args)
        if isinstance(outcome, str):
            skipped.append(outcome)
            print(outcome, flush=True)
            continue
        results.append(outcome)
        u = outcome.unchanged
        print(
            f"{name}: {u.perf_failures}/{u.runs} false alarms; "
            + ", ".join(
                f"+{k:.0%} {s.perf_failures}/{s.runs}" for k, s in outcome.regressed.items()
            )
            + (f"; copy {c.cost_failures}/{c.runs}" if (c := outcome.copied) else ""),
            flush=True,
        )
    print()
    print_header("Timing gate under load: false alarms and detection")
    print(
        f"CPUs {args.cpus}; load average at the start "
        f"{' '.join(load_average)}; {time.perf_counter() - started:.0f} s\n"
    )
    report(results, skipped, args)
    if args.dump is not None:
        dump(results, args.dump)
    if args.keep is None:
        shutil.rmtree(project)


if __name__ == "__main__":
    main()
