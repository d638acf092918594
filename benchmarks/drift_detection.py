"""How often does the drift gate catch a real slowdown, and how often does it cry wolf?

The workload is deterministic CPU work: a module whose forward runs a fixed ``k`` matrix
products. A slowdown of s% is injected by running ``round(k * (1 + s))`` products instead (no
sleep, so the extra time is real work that noise scales like the rest). Each trial times a
*baseline* and a *current* module exactly as the plugin's replay does (``pin_allocator()`` once
per process, then ``_measure.timing.time_call`` with a ``CpuStopwatch`` and the plugin's
default ``TimingPolicy``, which also records ``Timing.others_load``, the share of the timing's
wall time a thread of this process waited for a core (schedstat)) under ``torch.no_grad``, and calls
``pytest_workload._verdict.drift.judge``. The conditions (unchanged, +10%, +20%, +50%) are
interleaved within each round, and which side is timed first alternates, so machine noise hits
every condition alike. The same pairs of timings are judged at ``DEFAULT_TOLERANCE`` and at
the other tolerances given. For each condition and tolerance the table gives the regressions
judged, how many of them were marked ``contended`` (others_load above ``CONTENDED_LOAD`` on
either side: the gate reports those instead of failing, unless ``--workload-perf=strict``), and
so how often the gate would actually fail.

``--hogs N`` adds a condition that tests the claim that noise never makes a verdict: an
unchanged rerun whose *current* side is timed while N busy-looping processes compete for the
cores (they are started once, and paused with SIGSTOP except during those measurements). That
is a step change in machine load between baseline and current, the noise a shared CI runner
sees when a neighbour job starts. A false alarm there should come out ``contended``: reported,
not failed.

Run: ``python benchmarks/drift_detection.py [--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import torch
from _common import PausedProcesses, markdown_table, median, print_header, quantile, rate
from torch import nn

from pytest_workload._measure.timing import CpuStopwatch, TimingPolicy, pin_allocator, time_call
from pytest_workload._model.timing import Timing
from pytest_workload._verdict.drift import CONTENDED_LOAD, DEFAULT_TOLERANCE, judge


class RepeatedMatmul(nn.Module):
    """``k`` products of one fixed pair of matrices into a preallocated output."""

    def __init__(self, a: torch.Tensor, b: torch.Tensor, k: int) -> None:
        super().__init__()
        self.k = k
        self.register_buffer("a", a)
        self.register_buffer("b", b)
        self.register_buffer("out", torch.empty(a.shape[0], b.shape[1]))

    def forward(self) -> torch.Tensor:
        for _ in range(self.k):
            torch.mm(self.a, self.b, out=self.out)
        return self.out


@dataclass
class Condition:
    slowdown: float
    module: RepeatedMatmul
    noisy: bool = False
    pairs: list[tuple[Timing, Timing]] = field(default_factory=list)  # (current, baseline)
    current_wall_s: list[float] = field(default_factory=list)  # how long each current timing ran

    @property
    def label(self) -> str:
        if self.noisy:
            return "unchanged, current beside CPU hogs"
        if self.slowdown == 0:
            return "unchanged rerun"
        return f"+{100 * self.slowdown:.0f}% (k {self.module.k})"


class Hogs(PausedProcesses):
    """Busy-looping child processes, paused (SIGSTOP) except inside ``running()``."""

    def __init__(self, count: int) -> None:
        busy = [sys.executable, "-c", "while True: pass"]
        super().__init__([subprocess.Popen(busy) for _ in range(count)])


def timed(module: nn.Module, policy: TimingPolicy, hogs: Hogs | None = None) -> Timing:
    """One timing as the plugin's replay takes it (``time_call``: with ``others_load``)."""
    with hogs.running() if hogs is not None else contextlib.nullcontext():
        return time_call(module, CpuStopwatch(), policy, "cpu")


def load_summary(timings: list[Timing]) -> str:
    """Median others_load of some timings, and how many had none (no schedstat)."""
    known = [t.others_load for t in timings if t.others_load is not None]
    text = f"{100 * median(known):.0f}%" if known else "n/a"
    unknown = len(timings) - len(known)
    return text + (f" ({unknown}/{len(timings)} unknown)" if unknown else "")


def gate_cell(pairs: list[tuple[Timing, Timing]], tolerance: float) -> str:
    """Regressions judged, how many of them contended, and what the gate fails on."""
    drifts = [judge(cur, base, tolerance) for cur, base in pairs]
    judged = sum(d.kind == "regression" for d in drifts)
    contended = sum(d.kind == "regression" and d.contended for d in drifts)
    return f"{judged} judged, {contended} contended; fails {rate(judged - contended, len(pairs))}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 4 trials per condition")
    parser.add_argument("--trials", type=int, default=None, help="trials per condition (40)")
    parser.add_argument("--k", type=int, default=20, help="matrix products in the baseline")
    parser.add_argument("--size", type=int, default=128, help="square matrix size")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument(
        "--tolerances",
        type=float,
        nargs="+",
        default=[0.05, 0.1],
        help=f"tolerances judged besides DEFAULT_TOLERANCE={DEFAULT_TOLERANCE}",
    )
    parser.add_argument(
        "--slowdowns",
        type=float,
        nargs="+",
        default=[0.1, 0.2, 0.3, 0.5],
        help="injected slowdowns",
    )
    parser.add_argument(
        "--hogs",
        type=int,
        default=0,
        help="busy processes beside the current side of an extra unchanged condition (0: off)",
    )
    args = parser.parse_args(argv)
    trials = args.trials or (4 if args.quick else 40)
    torch.set_num_threads(args.threads)
    allocator = pin_allocator()  # as the plugin's replay does before its first CPU timing
    torch.manual_seed(0)
    a, b = torch.rand(args.size, args.size), torch.rand(args.size, args.size)
    baseline = RepeatedMatmul(a, b, args.k)
    conditions = [Condition(0.0, baseline)] + [
        Condition(s, RepeatedMatmul(a, b, round(args.k * (1 + s)))) for s in args.slowdowns
    ]
    if args.hogs:
        conditions.append(Condition(0.0, baseline, noisy=True))
    policy = TimingPolicy()  # the plugin's default policy
    others = sorted(t for t in set(args.tolerances) if t != DEFAULT_TOLERANCE)
    tolerances = [DEFAULT_TOLERANCE, *others]

    hogs = Hogs(args.hogs) if args.hogs else None
    with torch.no_grad(), contextlib.ExitStack() as stack:
        if hogs is not None:
            stack.callback(hogs.close)
        for c in conditions:
            c.module()
        for trial in range(trials):
            rotated = conditions[trial % len(conditions) :] + conditions[: trial % len(conditions)]
            for i, c in enumerate(rotated):
                noise = hogs if c.noisy else None
                if (trial + i) % 2 == 0:
                    base = timed(baseline, policy)
                started = time.perf_counter()
                current = timed(c.module, policy, noise)
                c.current_wall_s.append(time.perf_counter() - started)
                if (trial + i) % 2 == 1:
                    base = timed(baseline, policy)
                c.pairs.append((current, base))
            if (trial + 1) % 10 == 0 or trial + 1 == trials:
                print(f"trial {trial + 1}/{trials} done", flush=True)

    print()
    print_header("Drift gate: detection and false-alarm rates")
    print(
        f"Workload: {args.k} products of two {args.size}x{args.size} float32 matrices per call "
        f"(baseline median {median([p[1].median_s for p in conditions[0].pairs]) * 1e3:.2f} ms); "
        f"{trials} trials per condition; plugin default policy {policy}; "
        f"torch {args.threads} thread(s); allocator: {allocator}; "
        f"contended above others_load {CONTENDED_LOAD:g}.\n"
    )
    timing_rows, verdict_rows = [], []
    for c in conditions:
        ratios = [cur.median_s / base.median_s for cur, base in c.pairs]
        half = [(t.ci_high_s - t.ci_low_s) / 2 / t.median_s for pair in c.pairs for t in pair]
        timing_rows.append(
            [
                c.label,
                f"{median(ratios):.3f} [{quantile(ratios, 0.25):.3f}-{quantile(ratios, 0.75):.3f}]",
                f"{100 * median(half):.1f}%",
                f"{median(c.current_wall_s) * 1e3:.0f} ms",
                load_summary([p[0] for p in c.pairs]),
                load_summary([p[1] for p in c.pairs]),
                rate(sum(judge(cur, base).contended for cur, base in c.pairs), len(c.pairs)),
            ]
        )
        verdict_rows.append([c.label, *(gate_cell(c.pairs, t) for t in tolerances)])
    print("### Timings\n")
    print(
        markdown_table(
            [
                "condition",
                "measured ratio (median [IQR])",
                "median CI half-width",
                "current timing took (median)",
                "others_load, current (median)",
                "others_load, baseline (median)",
                "contended pairs",
            ],
            timing_rows,
        )
    )
    print(
        "\nothers_load is unknown only without schedstat (/proc/self/task/*/schedstat); "
        "judge counts an unknown load as 0.\n"
    )
    print("### Verdicts\n")
    headers = ["condition"] + [
        f"regressions at tol {t:g}" + (" (default)" if t == DEFAULT_TOLERANCE else "")
        for t in tolerances
    ]
    print(markdown_table(headers, verdict_rows))
    print(
        "\n'judged': regression verdicts; 'contended': those of them marked contended (reported, "
        "not failed); 'fails': regression and not contended, what the gate fails on (strict "
        "fails on all judged). In the unchanged rows, 'fails' is the false-alarm rate."
    )
    if hogs is not None:
        print(f"CPU hogs: {args.hogs} busy-looping processes during the current measurement.")
    verdicts = Counter(
        (t, judge(cur, base, t).kind) for t in tolerances for cur, base in conditions[0].pairs
    )
    print(
        "Unchanged reruns judged 'faster' (a spurious improvement): "
        + ", ".join(f"tol {t:g}: {verdicts[(t, 'faster')]}/{trials}" for t in tolerances)
    )


if __name__ == "__main__":
    main()
