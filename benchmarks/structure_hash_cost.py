"""Structure hashing grows with the number of modules, not with the number of parameters.

``pytest_workload.structure_hash`` reads each module's class, configuration and the *shapes*
of its tensors, never their values. Two sweeps, each timed side by side (sides alternate in a
rotating order within every round, one process) against hashing the weights, i.e. SHA-256 over
every parameter's bytes, what a weight-based cache key costs:

* **module count**: ``nn.Sequential`` of N ``nn.Linear(4, 4)`` (N = 10 ... 10,000), real CPU
  tensors.
* **parameter count**: ``nn.Sequential`` of 4 square ``nn.Linear`` layers sized to 1M ... 1B
  parameters. Structure hashing runs on modules built under ``torch.device("meta")`` (no
  memory). Meta tensors have no bytes to hash, so weight hashing (and, for comparison, structure
  hashing again) runs on real CPU copies, only up to ``--max-real-params`` (default 100M =
  400 MB of float32).

Also shown: a few timm models (real CPU tensors). Each entry is a median over rounds of the
mean time of back-to-back calls (at least ``--min-time`` seconds of them); a fresh memo every
call, so nothing is cached between calls.

Run: ``python benchmarks/structure_hash_cost.py [--quick]``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import math
import time
from collections.abc import Callable

import torch
from _common import fmt_time, markdown_table, median, print_header
from torch import nn

from pytest_workload import structure_hash


def weight_hash(module: nn.Module) -> str:
    """SHA-256 over every parameter's bytes (zero-copy views), in registration order."""
    digest = hashlib.sha256()
    for p in module.parameters():
        digest.update(p.detach().contiguous().reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def per_call(fn: Callable[[], object], min_time: float) -> float:
    """Mean seconds per call over back-to-back calls lasting at least ``min_time``."""
    calls, started = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - started
        if elapsed >= min_time:
            return elapsed / calls


def alternate(
    sides: dict[str, Callable[[], object]], rounds: int, min_time: float
) -> dict[str, float]:
    """Median per-call time of each side; the order rotates every round."""
    names = list(sides)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(per_call(sides[name], min_time))
    return {n: median(t) for n, t in times.items()}


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) against log(x): 1 = linear growth, 0 = constant."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    return num / sum((a - mx) ** 2 for a in lx)


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def square_stack(params: int) -> nn.Sequential:
    """4 ``Linear(d, d)`` layers with about ``params`` parameters, on the current device."""
    d = max(1, round((-1 + math.sqrt(1 + params)) / 2))  # 4 * (d*d + d) = params
    return nn.Sequential(*(nn.Linear(d, d) for _ in range(4)))


def module_sweep(sizes: list[int], rounds: int, min_time: float) -> list[list[object]]:
    rows, xs, ys = [], [], []
    for n in sizes:
        model = nn.Sequential(*(nn.Linear(4, 4) for _ in range(n)))
        med = alternate(
            {
                "structure": lambda m=model: structure_hash(m),
                "weights": lambda m=model: weight_hash(m),
            },
            rounds,
            min_time,
        )
        xs.append(n)
        ys.append(med["structure"])
        rows.append(
            [
                f"{n:,}",
                f"{count(model):,}",
                fmt_time(med["structure"]),
                fmt_time(med["structure"] / n),
                fmt_time(med["weights"]),
                f"{med['structure'] / med['weights']:.2f}x",
            ]
        )
    rows.append(["log-log slope", "", f"{slope(xs, ys):.2f}", "", "", ""])
    return rows


def param_sweep(
    sizes: list[int], max_real: int, rounds: int, min_time: float
) -> list[list[object]]:
    rows, xs, ys = [], [], []
    for target in sizes:
        with torch.device("meta"):
            meta = square_stack(target)
        sides: dict[str, Callable[[], object]] = {"meta": lambda m=meta: structure_hash(m)}
        real = None
        if target <= max_real:
            real = cpu_copy(meta)
            sides["cpu"] = lambda m=real: structure_hash(m)
            sides["weights"] = lambda m=real: weight_hash(m)
            assert structure_hash(real) == structure_hash(meta)  # device never enters it
        med = alternate(sides, rounds, min_time)
        n = count(meta)
        xs.append(n)
        ys.append(med["meta"])
        rows.append(
            [
                f"{n:,}",
                f"{n * 4 / 1e6:,.0f} MB",
                fmt_time(med["meta"]),
                fmt_time(med["cpu"]) if real is not None else "not built",
                fmt_time(med["weights"]) if real is not None else "not built (meta)",
                f"{med['weights'] / med['meta']:,.0f}x" if real is not None else "",
            ]
        )
        del real
    rows.append(["log-log slope", "", f"{slope(xs, ys):.2f}", "", "", ""])
    return rows


def cpu_copy(meta: nn.Module) -> nn.Module:
    """A CPU copy of a meta module, filled with a constant (values do not matter here)."""
    real = copy.deepcopy(meta).to_empty(device="cpu")
    with torch.no_grad():
        for p in real.parameters():
            p.fill_(0.5)
    return real


def timm_rows(names: list[str], rounds: int, min_time: float) -> list[list[object]]:
    import timm

    rows = []
    for name in names:
        model = timm.create_model(name, pretrained=False)
        med = alternate(
            {
                "structure": lambda m=model: structure_hash(m),
                "weights": lambda m=model: weight_hash(m),
            },
            rounds,
            min_time,
        )
        rows.append(
            [
                name,
                f"{sum(1 for _ in model.modules()):,}",
                f"{count(model):,}",
                fmt_time(med["structure"]),
                fmt_time(med["weights"]),
                f"{med['structure'] / med['weights']:.2f}x",
            ]
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 3 rounds, up to 10M real")
    parser.add_argument("--rounds", type=int, default=None, help="alternated rounds (default 7)")
    parser.add_argument("--min-time", type=float, default=None, help="seconds per measurement")
    parser.add_argument(
        "--max-real-params",
        type=float,
        default=None,
        help="largest parameter count built on the CPU for weight hashing (default 1e8)",
    )
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)
    min_time = args.min_time or (0.02 if args.quick else 0.1)
    max_real = int(args.max_real_params or (1e7 if args.quick else 1e8))
    torch.set_num_threads(1)

    modules = module_sweep([10, 100, 1_000, 10_000], rounds, min_time)
    params = param_sweep([10**6, 10**7, 10**8, 10**9], max_real, rounds, min_time)
    models = timm_rows(["mobilenetv2_035", "resnet18", "vit_tiny_patch16_224"], rounds, min_time)

    print_header("Structure hash cost: modules vs parameters")
    print(
        f"{rounds} alternated rounds; each entry the median of per-call means over >= "
        f"{min_time} s of calls. Weight hash = SHA-256 over all parameter bytes.\n"
    )
    print("### Against module count (nn.Sequential of nn.Linear(4, 4), CPU)\n")
    print(
        markdown_table(
            [
                "modules",
                "parameters",
                "structure_hash",
                "per module",
                "weight SHA-256",
                "structure / weights",
            ],
            modules,
        )
    )
    print(
        f"\n### Against parameter count (4 square nn.Linear layers; CPU copies up to "
        f"{max_real:,} parameters)\n"
    )
    print(
        markdown_table(
            [
                "parameters",
                "float32 size",
                "structure_hash (meta)",
                "structure_hash (CPU)",
                "weight SHA-256 (CPU)",
                "weights / structure",
            ],
            params,
        )
    )
    print("\n### timm models (CPU, pretrained=False)\n")
    print(
        markdown_table(
            ["model", "modules", "parameters", "structure_hash", "weight SHA-256", "ratio"], models
        )
    )
    print(
        "\nlog-log slope: least-squares exponent of time against the swept count "
        "(1 = linear, 0 = flat)."
    )


if __name__ == "__main__":
    main()
