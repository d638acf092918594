"""What does measuring without a trace cost per workload?

For each model (timm, ``pretrained=False``, eval, one input), per new top-level workload:

* **first call**: the extra time of the test's own first call, which the plugin observes: the
  inputs copied, its operations traced and FLOPs counted by the function mode around the
  call (:mod:`pytest_workload._tracing.tracer`), the state captured
  (``FirstCall`` begun before the forward, ended after it), over a plain forward;
* **isolation**: entering and leaving ``isolated(...)`` around nothing: copying every
  parameter, buffer and module attribute table, saving the RNGs, suspending hooks, then
  comparing and putting it all back; plus ``applied(context)`` (modes and train/eval);
* the same as a multiple of one plain forward, and the model's tensor bytes (the copy's size).

Each quantity is the median of ``--repeat`` runs, on one thread, under ``no_grad`` as the
timing agreement benchmark runs. The replay itself (its timing budget) is not included: it
costs the same as before.

Run: ``python benchmarks/isolation_cost.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
from _common import fmt_time, markdown_table, median, print_header

from pytest_workload._perf.first_call import FirstCall, applied, capture
from pytest_workload._perf.replay import isolated
from pytest_workload._tracing.tracer import tracing

MODELS = [
    ("mobilenetv2_035", 224),
    ("resnet18", 224),
    ("vit_tiny_patch16_224", 224),
    ("efficientnet_b0", 224),
    ("convnext_tiny", 224),
]


def timed(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - started) / 1e9)
    return median(times)


def row(name: str, size: int, repeat: int) -> list[object]:
    import timm

    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).eval()
    x = torch.rand(1, 3, size, size)
    for _ in range(3):
        model(x)
    forward = timed(lambda: model(x), repeat)

    def observed() -> None:
        first = FirstCall(model, model, (x,), {})
        with tracing(model, (x,)) as trace:
            first.counts = trace
            model(x)
        first.end(returned=True)

    first_call = timed(observed, repeat) - forward
    context = capture(model)

    def isolation() -> None:
        with isolated((model, model)), applied(context, model):
            pass

    isolate = timed(isolation, repeat)
    tensors = [*model.parameters(), *model.buffers()]
    size_bytes = sum(t.numel() * t.element_size() for t in tensors)
    return [
        f"{name} @ 1x3x{size}x{size}",
        f"{size_bytes / 2**20:.1f} MiB",
        fmt_time(forward),
        f"{fmt_time(first_call)} ({first_call / forward:.2f}x)",
        f"{fmt_time(isolate)} ({isolate / forward:.2f}x)",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 models, 5 repeats")
    parser.add_argument("--repeat", type=int, default=None, help="runs per median (default 21)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    repeat = args.repeat or (5 if args.quick else 21)
    models = MODELS[:2] if args.quick else MODELS
    with torch.no_grad():
        rows = [row(name, size, repeat) for name, size in models]
    print_header("Cost of isolation per new workload")
    headers = [
        "model",
        "tensors copied",
        "plain forward",
        "first call: extra (x forward)",
        "isolation: copy + restore (x forward)",
    ]
    print(markdown_table(headers, rows))


if __name__ == "__main__":
    main()
