"""Does the plugin's timing agree with ``torch.utils.benchmark``?

For each workload, the plugin's per-call median, taken the way a replay takes it (``replay`` with
the plugin's default ``TimingPolicy``, under the state captured from a call made under
``torch.no_grad``, on copies of the inputs, isolated from the program, after
``pin_allocator()``; timing there is ``time_call`` with ``cpu_lap``) is set beside the
median of
``torch.utils.benchmark.Timer(...).blocked_autorange()`` on the same callable. The two run
alternately in one process (which one goes first flips every round), and the table reports the
per-round ratio plugin/torch: its median over rounds, IQR and a bootstrap 95% interval. The
malloc thresholds pinned for the plugin are process-wide, so both sides run with them. The
plugin side's calibration kernel time per call (thread CPU time) is printed too.

Both sides run with ``--threads`` intra-op threads (default 1: ``Timer``'s own default, and on a
shared 2-core machine two threads per process oversubscribe the cores, which can make a call 50x
slower at random). ``--torch-threads`` sets ``Timer``'s ``num_threads`` apart, to show a mismatch.

Run: ``python benchmarks/timing_agreement.py [--quick] [--device cuda]`` (on CUDA the plugin
times with device events and ``Timer`` synchronises the device).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from _common import fmt_time, markdown_table, median, print_header, ratio_summary
from torch import nn
from torch.utils.benchmark import Timer

from pytest_workload._perf.first_call import capture
from pytest_workload._perf.replay import replay
from pytest_workload._perf.stopwatch import TimingPolicy, pin_allocator


@dataclass
class Side:
    medians: list[float] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    loads: list[float | None] = field(default_factory=list)


@dataclass
class Workload:
    name: str
    model: nn.Module
    x: torch.Tensor
    plugin: Side = field(default_factory=Side)
    torch: Side = field(default_factory=Side)

    def call(self) -> object:
        return self.model(self.x)


def _timm(name: str, size: int) -> tuple[nn.Module, torch.Tensor]:
    import timm

    return timm.create_model(name, pretrained=False).eval(), torch.rand(1, 3, size, size)


def build_workloads(quick: bool, device: str = "cpu") -> list[Workload]:
    torch.manual_seed(0)
    workloads = [Workload("nn.Linear(64, 64) @ 1x64", nn.Linear(64, 64).eval(), torch.rand(1, 64))]
    models = [("mobilenetv2_035", 96), ("resnet18", 96), ("vit_tiny_patch16_224", 224)]
    if not quick:
        models += [("mobilenetv2_035", 224), ("resnet18", 224), ("resnet50", 256)]
    for name, size in models:
        workloads.append(Workload(f"{name} @ 1x3x{size}x{size}", *_timm(name, size)))
    for w in workloads:
        w.model, w.x = w.model.to(device), w.x.to(device)
    return workloads


def plugin_timing(w: Workload, policy: TimingPolicy) -> tuple[float, int, float | None]:
    context = capture(w.model)  # as captured at a call the test made under no_grad
    timing = replay(w.model, w.model, (w.x,), {}, policy, context=context, count=False).timed
    assert timing is not None
    return timing.median_s, timing.n, timing.calibration_s


def kernel_summary(kernel_s: list[float | None]) -> str:
    known = [v for v in kernel_s if v is not None]
    return fmt_time(median(known)) if known else "n/a"


def torch_median(
    call: Callable[[], object], threads: int, max_run_time: float
) -> tuple[float, int]:
    timer = Timer(stmt="call()", globals={"call": call}, num_threads=threads)
    m = timer.blocked_autorange(min_run_time=max_run_time)
    return m.median, len(m.times)


def run(workloads: list[Workload], rounds: int, policy: TimingPolicy, threads: int, max_run: float):
    for round_index in range(rounds):
        for w in workloads:
            order = ("plugin", "torch") if round_index % 2 == 0 else ("torch", "plugin")
            for side in order:
                started = time.perf_counter()
                if side == "plugin":
                    value, n, load = plugin_timing(w, policy)
                    w.plugin.loads.append(load)
                    target = w.plugin
                else:
                    value, n = torch_median(w.call, threads, max_run)
                    target = w.torch
                target.wall_s.append(time.perf_counter() - started)
                target.medians.append(value)
                target.samples.append(n)
        print(f"round {round_index + 1}/{rounds} done", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 rounds, small models")
    parser.add_argument("--rounds", type=int, default=None, help="alternated rounds (default 10)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument(
        "--torch-threads", type=int, default=None, help="num_threads for Timer (default --threads)"
    )
    parser.add_argument(
        "--max-run-time", type=float, default=None, help="blocked_autorange min_run_time (s)"
    )
    parser.add_argument("--device", default="cpu", help="where the models run (cuda: events)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 10)
    torch.set_num_threads(args.threads)
    allocator = pin_allocator()  # as the plugin's replay does before its first CPU timing
    threads = args.torch_threads or args.threads
    max_run = args.max_run_time or (0.3 if args.quick else 2.0)
    policy = TimingPolicy()  # the plugin's default (what --workload-time-budget=0.25 gives)

    workloads = build_workloads(args.quick, args.device)
    with torch.no_grad():
        for w in workloads:  # warm every model once, outside the measurement
            for _ in range(3):
                w.call()
        run(workloads, rounds, policy, threads, max_run)

    print()
    print_header("Timing agreement: plugin median vs torch.utils.benchmark blocked_autorange")
    print(
        f"{rounds} alternated rounds per workload on {args.device}; plugin policy {policy}; "
        f"torch Timer num_threads={threads}, blocked_autorange(min_run_time={max_run}); "
        f"allocator: {allocator}.\n"
    )
    rows = []
    for w in workloads:
        ratios = [p / t for p, t in zip(w.plugin.medians, w.torch.medians, strict=True)]
        rows.append(
            [
                w.name,
                fmt_time(median(w.plugin.medians)),
                fmt_time(median(w.torch.medians)),
                ratio_summary(ratios),
                f"{median(w.plugin.samples):.0f} / {median(w.torch.samples):.0f}",
                f"{fmt_time(median(w.plugin.wall_s))} / {fmt_time(median(w.torch.wall_s))}",
                kernel_summary(w.plugin.loads),
            ]
        )
    print(
        markdown_table(
            [
                "workload",
                "plugin median",
                "torch median",
                "ratio plugin/torch",
                "samples plugin / torch",
                "wall time plugin / torch",
                "calibration kernel (plugin side, median)",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
