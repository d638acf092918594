"""Does the drift gate stay quiet on unchanged code on a loaded, shared machine, and still
catch a real +30%?

Each trial times a *baseline* and a *current* module as the plugin's replay does
(``pin_allocator()`` once, then ``_measure.timing.time_call`` with a ``CpuStopwatch`` and the
default ``TimingPolicy``, under ``torch.no_grad``), and judges the current timing with
``_verdict.drift.judge`` the way ``PerfGate`` does: a regression fails unless it is
``contended``. The current side is timed with the gate's re-timing: a timing the gate would fail
or whose median looks slower than the tolerance (``worth_retiming``) is taken again, afresh, up
to ``TimingPolicy.retimes`` times (``TimingPolicy.suspect``), as ``PerfGate.suspect`` does.

The baseline is timed with the injected load paused (SIGSTOP), as ``--snapshot-update`` on a
quiet machine would be (the machine's own load, other people's jobs, still runs: the table
gives the baselines' run-queue wait). The current side is timed while the load runs:

* ``--busy N`` processes spinning all the time;
* ``--bursty N`` neighbours that spin for 10-500 ms, then sleep for 10-500 ms (uniform);
* a *stopper* (``--stalls``) that freezes this process with SIGSTOP for 10-500 ms, every 0.5-3 s
  on average: a stall the scheduler cannot see, as when a VM's vCPU is descheduled.

The workload is deterministic CPU work, ``k`` products of two fixed matrices; the +30% is
injected as ``round(1.3 k)`` products, real work FLOPs would also see (the gate's FLOP check is
not used here, so the table measures the timing evidence alone). Unchanged and slowed trials
are interleaved at random. Besides the gate as shipped, each first (not re-timed) current
timing is judged two more ways, to show what each piece of evidence buys: wall time alone (no
CPU time, no load: the gate before these changes, for timings under its 0.1 s load probe), and
all evidence without re-timing.

Run: ``python benchmarks/loaded_drift.py [--trials 60 --slowed 20 --busy 2 --bursty 2]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import sys
import time

import torch
from _common import Load, markdown_table, median, print_header, rate
from torch import nn

from pytest_workload._measure.load import cpu_pressure_us
from pytest_workload._measure.timing import CpuStopwatch, TimingPolicy, pin_allocator, time_call
from pytest_workload._model.timing import Timing
from pytest_workload._verdict.drift import DEFAULT_TOLERANCE, Drift, judge, worth_retiming


class RepeatedMatmul(nn.Module):
    """``k`` products of one fixed pair of matrices into a preallocated output."""

    def __init__(self, size: int, k: int) -> None:
        super().__init__()
        self.k = k
        generator = torch.Generator().manual_seed(size)
        self.register_buffer("a", torch.rand(size, size, generator=generator))
        self.register_buffer("b", torch.rand(size, size, generator=generator))
        self.register_buffer("out", torch.empty(size, size))

    def forward(self) -> torch.Tensor:
        for _ in range(self.k):
            torch.mm(self.a, self.b, out=self.out)
        return self.out


def fails(drift: Drift) -> bool:
    """What ``PerfGate`` fails (its default mode): a regression no load explains."""
    return drift.kind == "regression" and not drift.contended


def wall_only(t: Timing) -> Timing:
    return dataclasses.replace(
        t, cpu_median_s=None, cpu_ci_low_s=None, cpu_ci_high_s=None, others_load=None
    )


@dataclasses.dataclass
class Trial:
    threads: int
    slowed: bool
    baseline: Timing
    first: Timing
    final: Timing
    pressure: float | None

    def verdicts(self) -> tuple[bool, bool, bool]:
        n = self.threads
        return (
            fails(judge(wall_only(self.first), wall_only(self.baseline), threads=n)),
            fails(judge(self.first, self.baseline, threads=n)),
            fails(judge(self.final, self.baseline, threads=n)),
        )


def trial(
    unchanged: nn.Module, slowed: nn.Module, is_slowed: bool, load: Load, threads: int
) -> Trial:
    policy = TimingPolicy()
    base = time_call(unchanged, CpuStopwatch(), policy, "cpu")
    seen: list[Timing] = []

    def suspect(_: str, t: Timing) -> bool:
        seen.append(t)
        drift = judge(t, base, threads=threads)
        return fails(drift) or worth_retiming(drift)

    gated = dataclasses.replace(policy, suspect=suspect).for_workload("bench")
    start = cpu_pressure_us()
    wall = time.perf_counter()
    with load.running():
        final = time_call(slowed if is_slowed else unchanged, CpuStopwatch(), gated, "cpu")
    end = cpu_pressure_us()
    pressure = (
        None if start is None or end is None else (end - start) / 1e6 / (time.perf_counter() - wall)
    )
    return Trial(threads, is_slowed, base, seen[0], final, pressure)


def calibrate(size: int, per_call_s: float) -> int:
    """How many products of ``size`` take about ``per_call_s``."""
    module = RepeatedMatmul(size, 10)
    timings = [time_call(module, CpuStopwatch(), TimingPolicy(budget_s=0.1), "cpu") for _ in "abc"]
    return max(1, round(10 * per_call_s / min(t.cpu_median_s or t.median_s for t in timings)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60, help="unchanged trials per setting")
    parser.add_argument("--slowed", type=int, default=20, help="+30%% trials per setting")
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--bursty", type=int, default=2)
    parser.add_argument("--no-stalls", dest="stalls", action="store_false")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--sizes",
        type=float,
        nargs="+",
        default=[0.001, 0.01],
        help="per-call seconds of the workloads",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pin_allocator()
    torch.set_grad_enabled(False)
    load = Load(args.busy, args.bursty, os.getpid() if args.stalls else None)
    trials: list[tuple[str, Trial]] = []
    started = time.perf_counter()
    try:
        for threads in args.threads:
            torch.set_num_threads(threads)
            for per_call in args.sizes:
                k = calibrate(128, per_call)
                unchanged, slowed = RepeatedMatmul(128, k), RepeatedMatmul(128, round(1.3 * k))
                label = f"{threads} thread{'s' * (threads > 1)}, ~{per_call * 1e3:g} ms (k={k})"
                plan = [False] * args.trials + [True] * args.slowed
                rng.shuffle(plan)
                for i, is_slowed in enumerate(plan):
                    trials.append((label, trial(unchanged, slowed, is_slowed, load, threads)))
                    print(f"{label}: {i + 1}/{len(plan)}", file=sys.stderr, flush=True)
    finally:
        load.close()
    report(args, trials, time.perf_counter() - started)


def report(args: argparse.Namespace, trials: list[tuple[str, Trial]], took_s: float) -> None:
    print_header("Drift gate on a loaded machine: false alarms and detections")
    print(
        f"Load on the current side: {args.busy} busy, {args.bursty} bursty (10-500 ms), "
        f"stalls {'on' if args.stalls else 'off'}; tolerance {DEFAULT_TOLERANCE:.0%}; "
        f"{len(trials)} trials in {took_s:.0f} s.\n"
    )
    labels = list(dict.fromkeys(label for label, _ in trials))
    rows = []
    for label in [*labels, "all"]:
        chosen = [t for name, t in trials if label in (name, "all")]
        for slowed in (False, True):
            group = [t for t in chosen if t.slowed == slowed]
            if not group:
                continue
            verdicts = [t.verdicts() for t in group]
            pressure = [t.pressure for t in group if t.pressure is not None]
            rows.append(
                [
                    label,
                    "+30%" if slowed else "unchanged",
                    *(rate(sum(v[i] for v in verdicts), len(group)) for i in range(3)),
                    sum(t.final.retimed > 0 for t in group),
                    f"{median([t.first.median_s / t.baseline.median_s for t in group]):.2f}x",
                    f"{median([(t.first.others_load or 0) for t in group]):.0%}",
                    f"{median([(t.baseline.others_load or 0) for t in group]):.0%}",
                    f"{median(pressure):.0%}" if pressure else "n/a",
                ]
            )
    print(
        markdown_table(
            [
                "workload",
                "current",
                "fails: wall only, no re-timing",
                "fails: all evidence, no re-timing",
                "fails: the gate (re-timed)",
                "re-timed",
                "wall ratio (median)",
                "run-queue wait, current (median)",
                "run-queue wait, baseline (median)",
                "CPU pressure, current (median)",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
