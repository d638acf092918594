"""Which clock and block size make the workload/calibration ratio hold under load?

For an MLP, a small CNN and mobilenetv2_035 at 1x3x96x96, blocks of the workload alternate with
blocks of the plugin's calibration kernel (``_perf.calibration``), each sized to
``--block-ms`` by a warm-up on the chosen clock; the median per-pair ratio is taken over 30
pairs, five times. Printed per workload and clock: the five ratios, their max/min spread, and
the spread of the workload's absolute median. Run it quiet, then beside two spinners on the same
CPU (``--busy``): a ratio that divides out the load moves less between the two runs than the
absolute time does.

Run: ``python benchmarks/calibration_stability.py --cpus 1 [--busy] [--block-ms 1]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

SPIN = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", type=lambda v: {int(c) for c in v.split(",")}, default=None)
    parser.add_argument("--busy", action="store_true", help="two spinners per CPU")
    parser.add_argument("--block-ms", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="the MLP and the CNN only")
    args = parser.parse_args(argv)
    cpus = args.cpus or os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    spinners = []
    if args.busy:
        spinners = [
            subprocess.Popen([sys.executable, "-c", SPIN, str(c)]) for c in cpus for _ in "ab"
        ]
    try:
        run(args, len(cpus))
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def run(args: argparse.Namespace, threads: int) -> None:
    import timm
    import torch
    from torch import nn

    from pytest_workload._perf.device import calibration_kernel

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    kernel = calibration_kernel("cpu")
    mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).eval()
    cnn = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    ).eval()
    x_mlp, x_cnn, x_mob = torch.rand(4, 32), torch.rand(1, 3, 64, 64), torch.rand(1, 3, 96, 96)
    workloads: dict[str, Callable[[], object]] = {
        "mlp": lambda: mlp(x_mlp),
        "small cnn": lambda: cnn(x_cnn),
    }
    if not args.quick:
        mob = timm.create_model("mobilenetv2_035", pretrained=False).eval()
        workloads["mobilenetv2_035"] = lambda: mob(x_mob)
    clocks = {"thread CPU": time.thread_time_ns, "wall": time.perf_counter_ns}
    print(f"load: {'two spinners per CPU' if args.busy else 'quiet'}; block {args.block_ms} ms")
    print("| workload | clock | calls per block W / C | ratio, 5 runs | spread | abs spread |")
    print("| --- | --- | --- | --- | --- | --- |")
    with torch.no_grad():
        for name, fn in workloads.items():
            for clock_name, clock in clocks.items():
                wn = calls_per_block(fn, clock, args.block_ms)
                cn = calls_per_block(kernel, clock, args.block_ms)
                runs = [pairs(fn, kernel, wn, cn, clock) for _ in range(5)]
                ratios, absolute = [r[0] for r in runs], [r[1] for r in runs]
                print(
                    f"| {name} | {clock_name} | {wn} / {cn} | "
                    + " ".join(f"{r:.3f}" for r in ratios)
                    + f" | {max(ratios) / min(ratios):.3f} | "
                    f"{max(absolute) / min(absolute):.3f} |",
                    flush=True,
                )


def block(fn: Callable[[], object], number: int, clock: Callable[[], int]) -> float:
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def calls_per_block(fn: Callable[[], object], clock: Callable[[], int], block_ms: float) -> int:
    for _ in range(5):
        fn()
    per_call = min(block(fn, 1, clock) for _ in range(10))
    return max(1, round(block_ms * 1e6 / max(per_call, 1)))


def pairs(
    fn: Callable[[], object],
    kernel: Callable[[], object],
    wn: int,
    cn: int,
    clock: Callable[[], int],
) -> tuple[float, float]:
    ratios, absolute = [], []
    for _ in range(30):
        w = block(fn, wn, clock)
        ratios.append(w / block(kernel, cn, clock))
        absolute.append(w)
    return statistics.median(ratios), statistics.median(absolute)


if __name__ == "__main__":
    main()
