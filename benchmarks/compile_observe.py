"""What does observing the test's own ``torch.compile`` cost?

* **compile**: the CPU time of the first call of a compiled real model (dynamo's trace plus
  the backend's compile), with the plugin's observation around it (``CompileWatch.begin`` ...
  ``end``: the compile callbacks, the graph-break loggers tapped while dynamo compiles, the
  compile metrics read after) against the same call without it, side by side in one process.
  Each sample starts from ``torch._dynamo.reset()`` so that both sides compile from nothing;
  the sides alternate within every round. On a shared machine the two sides differ by the
  noise of other processes; the last column is exact: the CPU time of the observation's own
  steps (begin, the loggers' tap and its closing, each break handled, end), timed inside the
  observed call, as a share of that call. Models: timm's resnet18, and the
  same with a ``print`` in each of its four stages (four graph breaks, so the loggers fire).
* **nothing compiled**: a fresh interpreter records a plain model with ``WorkloadRecorder``
  and reports whether ``torch._dynamo`` was imported (it must not be); ``python -X
  importtime`` says what importing the observation's package (``pytest_workload._compile``
  and its modules) adds.

Run: ``python benchmarks/compile_observe.py [--quick] [--rounds N] [--backends
eager,aot_eager,inductor]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from _common import fmt_time, machine, markdown_table, median, print_header

NOTHING_COMPILED = """
import json, sys
import torch
from pytest_workload import WorkloadRecorder
recorder = WorkloadRecorder("plain")
with recorder.recording(all_roots=True):
    torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())(torch.rand(2, 8))
print(json.dumps({"dynamo_imported": "torch._dynamo" in sys.modules,
                  "workloads": len(recorder.workloads())}))
"""


def _model(breaks: bool) -> object:
    import timm
    from torch import nn

    model = timm.create_model("resnet18", pretrained=False).eval()
    if breaks:

        class Loud(nn.ReLU):
            def forward(self, x):  # type: ignore[no-untyped-def]
                print("stage", end="\r")
                return super().forward(x)

        for stage in (model.layer1, model.layer2, model.layer3, model.layer4):
            stage[0].act1 = Loud()
    return model


#: Seconds of CPU time the observation's own code took in the current sample.
_OWN: list[float] = []


def _timed(fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _OWN.append(time.process_time() - start)

    return run


def _time_own_code() -> None:
    """Wrap the observation's own steps (begin, the loggers' tap and its closing, each break
    handled, end) in CPU timers."""
    from pytest_workload._compile import observe

    observe.CompileWatch.begin = _timed(observe.CompileWatch.begin)  # type: ignore[method-assign]
    observe.CallObservation.end = _timed(observe.CallObservation.end)  # type: ignore[method-assign]
    observe.CallObservation.emit = _timed(observe.CallObservation.emit)  # type: ignore[method-assign]
    observe.CallObservation._started = _timed(observe.CallObservation._started)  # type: ignore[method-assign]
    observe.CallObservation._ended = _timed(observe.CallObservation._ended)  # type: ignore[method-assign]


def _first_call(model: object, backend: str, observe: bool) -> tuple[float, float]:
    """CPU seconds of a first call (compile included), and of the observation's own code."""
    import torch

    from pytest_workload._compile.observe import CompileWatch

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    x = torch.rand(1, 3, 224, 224)
    _OWN.clear()
    start = time.process_time()
    with torch.no_grad():
        observation = CompileWatch(None).begin(compiled) if observe else None
        compiled(x)
        health = None if observation is None else observation.end()
    elapsed = time.process_time() - start
    assert observation is None or (health is not None and health.graphs >= 1)
    return elapsed, sum(_OWN)


def compile_rows(rounds: int, backends: list[str]) -> list[list[object]]:
    rows: list[list[object]] = []
    for backend in backends:
        for breaks in (False, True):
            model = _model(breaks)
            sides: dict[bool, list[float]] = {False: [], True: []}
            own: list[float] = []
            _first_call(model, backend, False)  # (warm-up: imports, first-time registrations)
            for r in range(rounds):
                order: list[bool] = [False, True] if r % 2 == 0 else [True, False]
                for observe in order:
                    elapsed, mine = _first_call(model, backend, observe)
                    sides[observe].append(elapsed)
                    own += [mine / elapsed] if observe else []
            plain, observed = median(sides[False]), median(sides[True])
            ratios = sorted(o / p for o, p in zip(sides[True], sides[False], strict=True))
            name = "resnet18 + 4 prints" if breaks else "resnet18"
            rows.append(
                [
                    name,
                    backend,
                    fmt_time(plain),
                    fmt_time(observed),
                    f"{(observed / plain - 1) * 100:+.1f}%",
                    f"{(ratios[0] - 1) * 100:+.1f}% .. {(ratios[-1] - 1) * 100:+.1f}%",
                    f"{median(own) * 100:.2f}% (max {max(own) * 100:.2f}%)",
                ]
            )
            print(markdown_table(HEADERS, rows[-1:]).splitlines()[-1], flush=True)
    return rows


HEADERS = [
    "model",
    "backend",
    "compile, plain",
    "compile, observed",
    "observed / plain",
    "per round",
    "own code / compile",
]


def _import_us() -> int:
    """Microseconds ``pytest_workload._compile`` and its modules take to import: the cumulative
    count of each such row not nested in another (the package imports none of its modules)."""
    lines = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import pytest_workload"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr.splitlines()
    total, outer = 0, -1
    for line in reversed(lines):  # (a row follows the rows of what its module imported)
        _, cumulative, name = line.split("|")
        depth = len(name) - len(name.lstrip())
        if not cumulative.strip().isdigit() or 0 <= outer < depth:
            continue
        outer = -1
        if name.strip().startswith("pytest_workload._compile"):
            total, outer = total + int(cumulative), depth
    return total


def nothing_compiled(repeats: int) -> dict[str, object]:
    found = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", NOTHING_COMPILED], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(repeats)
    ]
    return {
        "import of pytest_workload._compile": fmt_time(
            median([_import_us() for _ in range(repeats)]) / 1e6
        ),
        "dynamo imported": any(f["dynamo_imported"] for f in found),
        "workloads": found[0]["workloads"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="eager,aot_eager")
    parser.add_argument("--quick", action="store_true", help="one round, backend eager")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.backends = 1, "eager"
    print_header("Observing torch.compile")
    plain = nothing_compiled(3)
    print(f"nothing compiled: {plain}\n", flush=True)
    print(markdown_table(HEADERS, []))
    _time_own_code()
    rows = compile_rows(args.rounds, args.backends.split(","))
    print(f"\n{machine()}; {len(rows)} rows")


if __name__ == "__main__":
    main()
