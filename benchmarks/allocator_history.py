"""Does a workload's CPU timing depend on what ran before it in the process?

An extra check beside the drift benchmarks. glibc's malloc adapts its mmap and trim thresholds
to the largest blocks a process has freed. Until a bigger model has run, a small model's
activation buffers can be returned to the kernel and faulted in again on every call, so the same
workload can time differently in a process that ran a larger model first (as a test earlier in
the session would). The drift gate compares timings taken in different sessions, where the test
order, ``-k`` selection or xdist distribution can differ.

Each round starts fresh subprocesses. In each, the plugin's timing (``measure`` +
``summarize``, ``cpu_lap``, default ``TimingPolicy``, ``torch.no_grad``) times the target
model twice: once in the fresh process, then again after either one forward of a larger model
(treatment) or nothing (control). ``judge`` compares the second timing against the first, as if
the first had been the baseline, and the other way round (a baseline taken in a full session,
compared with a run of the test alone). The same runs again with the thresholds pinned in
process by ``_perf.stopwatch.pin_allocator()``, as the plugin's replay does before its
first CPU timing, and (``--fixed-malloc``) with ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` set in the environment, which turns the adaptation off too.
Treatment and control alternate within every round.

Run: ``python benchmarks/allocator_history.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from _common import markdown_table, median, print_header, quantile, rate

CHILD = r"""
import json, sys, torch, timm
from pytest_workload._perf.device import calibration_kernel
from pytest_workload._perf.stopwatch import (
    TimingPolicy, cpu_lap, measure, pin_allocator, summarize,
)
torch.set_num_threads(1)
if "PIN_LIKE_THE_PLUGIN" in __import__("os").environ:
    pin_allocator()  # what the plugin's replay does before its first CPU timing
target, other, treat = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
model = timm.create_model(target, pretrained=False).eval()
x = torch.rand(1, 3, 224, 224)
def timed():
    samples = measure(
        lambda: model(x), cpu_lap, TimingPolicy(), reference=calibration_kernel("cpu")
    )
    return summarize(samples.wall_s, "cpu").to_dict()
with torch.no_grad():
    first = timed()
    if treat:
        timm.create_model(other, pretrained=False).eval()(torch.rand(1, 3, 224, 224))
    second = timed()
print(json.dumps([first, second]))
"""

FIXED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def child(target: str, other: str, treat: bool, extra_env: dict[str, str]) -> list[dict]:
    env = {**os.environ, **extra_env}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, target, other, "1" if treat else "0"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    from pytest_workload._perf.baseline import DEFAULT_TOLERANCE, judge
    from pytest_workload._workload.timing import Timing

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 round, default malloc")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 6)")
    parser.add_argument("--target", default="mobilenetv2_035", help="timm model that is timed")
    parser.add_argument("--other", default="resnet18", help="timm model run in between")
    parser.add_argument(
        "--fixed-malloc",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also run with the malloc thresholds fixed (default: on unless --quick)",
    )
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 6)
    fixed = (not args.quick) if args.fixed_malloc is None else args.fixed_malloc
    envs = {"default malloc": {}, "pinned by pin_allocator()": {"PIN_LIKE_THE_PLUGIN": "1"}}
    envs |= {"fixed malloc thresholds (env)": FIXED_MALLOC} if fixed else {}

    results: dict[tuple[str, bool], list[tuple[Timing, Timing]]] = {}
    for r in range(rounds):
        for env_name, extra in envs.items():
            for treat in (True, False) if r % 2 == 0 else (False, True):
                first, second = child(args.target, args.other, treat, extra)
                pair = (Timing.from_dict(second), Timing.from_dict(first))
                results.setdefault((env_name, treat), []).append(pair)
        print(f"round {r + 1}/{rounds} done", flush=True)

    print()
    print_header("Allocator history: one workload timed before and after a larger model")
    print(
        f"{rounds} rounds of fresh subprocesses; target {args.target} @ 1x3x224x224, in between: "
        f"one forward of {args.other} (treatment) or nothing (control); torch 1 thread. "
        f"Verdict: judge(second timing, baseline=first timing, tolerance={DEFAULT_TOLERANCE}).\n"
    )
    rows = []
    for (env_name, treat), pairs in results.items():
        ratios = [cur.median_s / base.median_s for cur, base in pairs]
        kinds = [judge(cur, base).kind for cur, base in pairs]
        reverse = [judge(base, cur).kind for cur, base in pairs]
        rows.append(
            [
                env_name,
                f"after {args.other}" if treat else "control (nothing in between)",
                f"{median([b.median_s for _, b in pairs]) * 1e3:.2f} ms",
                f"{median([c.median_s for c, _ in pairs]) * 1e3:.2f} ms",
                f"{median(ratios):.3f} [{quantile(ratios, 0.25):.3f}-{quantile(ratios, 0.75):.3f}]",
                rate(kinds.count("faster"), len(kinds)),
                rate(kinds.count("regression"), len(kinds)),
                rate(reverse.count("regression"), len(reverse)),
            ]
        )
    print(
        markdown_table(
            [
                "malloc",
                "second timing",
                "first (fresh process)",
                "second",
                "ratio second/first [IQR]",
                "judged faster",
                "judged regression",
                "reversed (baseline = second): judged regression",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
