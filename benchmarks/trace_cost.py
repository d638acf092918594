"""What does watching a first call cost: a function mode (the tracer) against a dispatch mode?

The tracer (``TorchFunctionMode``: operations, FLOPs and foreign writes in one pass) and the
counter it replaces (``TorchDispatchMode`` with ``torch.utils.flop_counter``'s formulas and
the write check) each watch one call of a model; a bare call is the reference. The three
run interleaved in one process, in a rotating order, so their ratios hold under load.

* **per call**: the median time of a watched call, per model (a tiny MLP, timm
  ``mobilenetv2_035`` and ``resnet18`` at 1x3x224x224), and its ratio to the bare call; the
  tracer also with its cost counting (bytes, op counts, peak memory) turned off, so the
  counting's own cost is read from one interleaved run.
* **first use**: a fresh interpreter that has imported torch enters each mode once around a
  tiny call; the wall time of that first call (for the dispatch mode it includes importing
  ``torch._dynamo``), median of several interpreters.

Run: ``python benchmarks/trace_cost.py [--quick]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import markdown_table, median, print_header, ratio_summary

from pytest_workload._tracing.cost_count import counting
from pytest_workload._tracing.tracer import tracing

FIRST_USE = """
import sys, time, torch
from torch import nn
from pytest_workload._tracing.{module} import {name}
model, x = nn.Linear(8, 8), torch.rand(2, 8)
started = time.perf_counter()
with {name}(model, (x,)):
    model(x)
print(time.perf_counter() - started, "torch._dynamo" in sys.modules)
"""


def models() -> dict[str, tuple[nn.Module, torch.Tensor]]:
    import timm

    torch.manual_seed(0)
    tiny = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    out = {"tiny MLP 1x8": (tiny, torch.rand(1, 8))}
    for arch in ("mobilenetv2_035", "resnet18"):
        out[f"{arch} 1x3x224x224"] = (
            timm.create_model(arch, pretrained=False).eval(),
            torch.rand(1, 3, 224, 224),
        )
    return out


def watched(kind: str, model: nn.Module, x: torch.Tensor) -> Callable[[], None]:
    def call() -> None:
        if kind == "bare":
            model(x)
            return
        if kind == "dispatch mode":
            with counting(model, (x,)):
                model(x)
            return
        with tracing(model, (x,)) as trace:
            if kind == "function mode, no costs":
                trace.allocations.account = lambda *_: None  # type: ignore[method-assign]
            model(x)

    return call


def per_call(rounds: int) -> list[list[object]]:
    rows = []
    kinds = ["bare", "function mode", "function mode, no costs", "dispatch mode"]
    for label, (model, x) in models().items():
        calls = {k: watched(k, model, x) for k in kinds}
        times: dict[str, list[float]] = {k: [] for k in kinds}
        with torch.no_grad():
            for k in kinds:  # warm-up; the dispatch mode's first use imports torch._dynamo
                calls[k]()
            for r in range(rounds):
                for k in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
                    started = time.perf_counter()
                    calls[k]()
                    times[k].append(time.perf_counter() - started)
        for k in kinds[1:]:
            ratios = [a / b for a, b in zip(times[k], times["bare"], strict=True)]
            rows.append(
                [label, k, f"{median(times[k]) * 1e3:.2f} ms",
                 f"{median(times['bare']) * 1e3:.2f} ms", ratio_summary(ratios)]
            )  # fmt: skip
    return rows


def first_use(runs: int) -> list[list[object]]:
    root = str(Path(__file__).resolve().parent.parent)
    rows = []
    results: dict[str, list[tuple[float, bool]]] = {"function mode": [], "dispatch mode": []}
    for _ in range(runs):
        for kind, (module, name) in {
            "function mode": ("tracer", "tracing"),
            "dispatch mode": ("cost_count", "counting"),
        }.items():
            code = FIRST_USE.format(module=module, name=name)
            out = subprocess.run(
                [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
            ).stdout.split()
            results[kind].append((float(out[0]), out[1] == "True"))
    for kind, found in results.items():
        rows.append([kind, f"{median([t for t, _ in found]) * 1e3:.1f} ms", str(found[0][1])])
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print_header("Watching a first call: function mode against dispatch mode")
    print(markdown_table(
        ["model", "watched by", "median", "bare median", "ratio to bare"],
        per_call(6 if args.quick else 30),
    ))  # fmt: skip
    print()
    print(markdown_table(
        ["first use in a fresh interpreter", "median first call", "torch._dynamo imported"],
        first_use(2 if args.quick else 7),
    ))  # fmt: skip


if __name__ == "__main__":
    main()
