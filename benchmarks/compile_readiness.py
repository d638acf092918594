"""What does a compile readiness check (``@pytest.mark.workloads(compile=...)``) cost?

For each model and backend, a fresh ``WorkloadRecorder`` records one eager call, then
``measure`` runs the readiness check alone (timing off, FLOPs counted on the first call, so
nothing else is replayed): a forked child resets dynamo, compiles the model with the backend,
calls it once and sends back what it saw. The time is the whole check, fork to answer, as a
test pays it after its body. The models are timm's resnet18 and mobilenetv2_035 (224 px) and
a tiny GPT-2 (2 layers, 64 wide, 16 tokens) built from a config. After all rows the parent
reports how many frames its own dynamo compiled (it must be none: the compiles are the
children's; timm imports ``torch._dynamo`` itself, so its import says nothing here).

Run: ``python benchmarks/compile_readiness.py [--rounds N] [--backends eager,aot_eager]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from _common import fmt_time, machine, markdown_table, median, print_header

from pytest_workload._torch_internals import compilation_metrics


def _timm(name: str) -> tuple[Any, Callable[[], tuple[Any, ...]]]:
    import timm
    import torch

    model = timm.create_model(name, pretrained=False).eval()
    return model, lambda: (torch.rand(1, 3, 224, 224),)


def _gpt2() -> tuple[Any, Callable[[], tuple[Any, ...]]]:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=64)
    model = GPT2LMHeadModel(config).eval()
    return model, lambda: (torch.randint(0, 1000, (1, 16)),)


MODELS: dict[str, Callable[[], tuple[Any, Callable[[], tuple[Any, ...]]]]] = {
    "resnet18": lambda: _timm("resnet18"),
    "mobilenetv2_035": lambda: _timm("mobilenetv2_035"),
    "tiny gpt2": _gpt2,
}


def _check(model: Any, inputs: Callable[[], tuple[Any, ...]], backend: str) -> tuple[float, str]:
    """Seconds of one readiness check, and what it found."""
    import torch

    from pytest_workload import WorkloadRecorder

    recorder = WorkloadRecorder("bench", timing=False)
    with recorder.recording(all_roots=False), torch.no_grad():
        recorder.track(model)
        model(*inputs())
    recorder.compile_backend = backend
    start = time.perf_counter()
    problems = recorder.measure(None)
    elapsed = time.perf_counter() - start
    assert not problems, problems
    [workload] = recorder.workloads()
    ready = workload.compile_readiness
    assert ready is not None
    health = ready.health
    return elapsed, f"{health.graphs} graphs, {len(health.breaks)} break sites"


HEADERS = ["model", "backend", "readiness check (median)", "min .. max", "found"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="eager,aot_eager")
    args = parser.parse_args(argv)
    print_header("A compile readiness check")
    print(markdown_table(HEADERS, []), flush=True)
    for name, build in MODELS.items():
        model, inputs = build()
        for backend in args.backends.split(","):
            samples, found = [], ""
            for _ in range(args.rounds):
                elapsed, found = _check(model, inputs, backend)
                samples.append(elapsed)
            row = [name, backend, fmt_time(median(samples))]
            row += [f"{fmt_time(min(samples))} .. {fmt_time(max(samples))}", found]
            print(markdown_table(HEADERS, [row]).splitlines()[-1], flush=True)
    print(f"\nframes the parent's dynamo compiled: {len(compilation_metrics()())}")
    print(machine())


if __name__ == "__main__":
    main()
