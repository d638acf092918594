"""Which reference kernel follows which model's speed over time?

In one process on one thread, blocks of three models (mobilenetv2_035 at 1x3x96x96, resnet18 at
1x3x224x224, a small CNN) and of three references (the plugin's calibration kernel, a
memory-leaning kernel: a depthwise convolution over 0.9 MB and a pass over 8 MB, and both in
turn) run round after round for ``--seconds``, each block about 4 ms on this thread's CPU clock
and started by one untimed call. For each model it prints the coefficient of variation and the
range of its per-round time (absolute) and of its ratio to each reference, over means of 10
rounds: the phases of the machine. A reference that follows a model's phases makes its ratio
steadier than its absolute time.

Run: ``taskset -c 0 python benchmarks/kernel_tracking.py [--seconds 240]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import timm
import torch
import torch.nn.functional as F
from _common import markdown_table, print_header
from torch import nn

from pytest_workload._perf.device import calibration_kernel


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=240.0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)

    def tensor(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=generator)

    def forward(model: nn.Module, x: torch.Tensor) -> Callable[[], object]:
        model.eval()

        def run() -> object:
            with torch.no_grad():
                return model(x)

        return run

    kernel = calibration_kernel("cpu")
    activations, filters, stream = tensor(1, 96, 48, 48), tensor(96, 1, 3, 3), tensor(2_000_000)

    def memory() -> object:
        with torch.no_grad():
            return F.conv2d(activations, filters, padding=1, groups=96).sum() + (stream * 1.5).sum()

    def both() -> object:
        kernel()
        return memory()

    cnn = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1))
    subjects: dict[str, Callable[[], object]] = {
        "mobilenetv2_035": forward(timm.create_model("mobilenetv2_035"), tensor(1, 3, 96, 96)),
        "resnet18": forward(timm.create_model("resnet18"), tensor(1, 3, 224, 224)),
        "cnn": forward(cnn, tensor(1, 3, 32, 32)),
        "kernel": kernel,
        "memory": memory,
        "kernel+memory": both,
    }

    def block(fn: Callable[[], object], number: int) -> float:
        fn()
        start = time.thread_time_ns()
        for _ in range(number):
            fn()
        return (time.thread_time_ns() - start) / number

    numbers = {name: max(1, int(4e6 / block(fn, 3))) for name, fn in subjects.items()}
    series: dict[str, list[float]] = {name: [] for name in subjects}
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        for name, fn in subjects.items():
            series[name].append(block(fn, numbers[name]))

    def phases(values: list[float]) -> str:
        means = [statistics.mean(values[i : i + 10]) for i in range(0, len(values) - 9, 10)]
        spread = statistics.pstdev(means) / statistics.mean(means)
        return f"{spread:.1%} (range {max(means) / min(means) - 1:.0%})"

    rows = []
    for model in ("mobilenetv2_035", "resnet18", "cnn"):
        row = [model, phases(series[model])]
        for reference in ("kernel", "memory", "kernel+memory"):
            ratios = [a / b for a, b in zip(series[model], series[reference], strict=True)]
            row.append(phases(ratios))
        rows.append(row)
    print_header("Reference kernels against the machine's phases")
    print(f"{len(series['kernel'])} rounds of about 4 ms blocks; CV over means of 10 rounds\n")
    headers = ["model", "absolute", "over the kernel", "over memory", "over kernel+memory"]
    print(markdown_table(headers, rows))


if __name__ == "__main__":
    main()
