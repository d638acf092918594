"""What do torch's hooks alone cost a root call, before the recorder does any work?

On linear-13 (an ``nn.Sequential`` of 12 ``nn.Linear(8, 8)``, issue 14's hot-path model), four
sides alternate in one process, ``--rounds`` times, each the fastest of 50 calls on the
thread's CPU clock:

* **plain**: no hook;
* **no-op hooks**: the two module hooks the recorder gives a root (a pre-hook with kwargs, an
  always-called forward hook with kwargs), each doing nothing;
* **no-op hooks + global watch**: the same, with a global pre-hook (doing nothing) that is
  taken out of torch's table when the root starts and put back when it ends, as the recorder
  does so that submodules keep torch's hook-free path;
* **recorder**: ``WorkloadRecorder(timing=False).recording(all_roots=True)`` at depth 0, its
  root settled (the calls timed are past its first five).

The third side is the floor of the recorder's hook design; the fourth minus the third is the
recorder's own work per root call. ``--baseline CHECKOUT`` adds a fifth side, the recorder of
another checkout of this repository (say, main), timed in the same rounds.

Run: ``python benchmarks/hook_floor.py [--rounds 25] [--baseline ../main]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import torch
from _common import baseline_package, markdown_table, median, print_header
from torch import nn
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.utils.hooks import RemovableHandle

from pytest_workload import WorkloadRecorder


def fastest(model: nn.Module, x: torch.Tensor, calls: int = 50) -> int:
    best = 2**63
    for _ in range(calls):
        start = time.thread_time_ns()
        model(x)
        best = min(best, time.thread_time_ns() - start)
    return best


def _nothing(*_: Any) -> None:
    return None


class GlobalWatch:
    """A global pre-hook taken out of torch's table as a root starts, put back as it ends."""

    def __init__(self) -> None:
        self.handle: RemovableHandle = register_module_forward_pre_hook(_nothing)
        self.table = self.handle.hooks_dict_ref()

    def enter(self, *_: Any) -> None:
        del self.table[self.handle.id]

    def exit(self, *_: Any) -> None:
        self.table[self.handle.id] = _nothing

    def close(self) -> None:
        self.handle.remove()


def with_hooks(model: nn.Module, x: torch.Tensor, watch: bool) -> int:
    globals_ = GlobalWatch() if watch else None
    pre: Callable[..., None] = globals_.enter if globals_ else _nothing
    always: Callable[..., None] = globals_.exit if globals_ else _nothing
    handles = [
        model.register_forward_pre_hook(pre, with_kwargs=True),
        model.register_forward_hook(always, with_kwargs=True, always_call=True),
    ]
    try:
        return fastest(model, x)
    finally:
        for handle in handles:
            handle.remove()
        if globals_ is not None:
            globals_.close()


def recorded(model: nn.Module, x: torch.Tensor, recorder_class: type = WorkloadRecorder) -> int:
    recorder = recorder_class("benchmarks::hook_floor", timing=False)
    with recorder.recording(all_roots=True):
        return fastest(model, x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--baseline", help="another checkout whose recorder is timed too")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(12)]).eval()
    x = torch.rand(1, 8)
    sides: dict[str, Callable[[], int]] = {
        "plain": lambda: fastest(model, x),
        "no-op hooks": lambda: with_hooks(model, x, watch=False),
        "no-op hooks + global watch": lambda: with_hooks(model, x, watch=True),
        "recorder, depth 0": lambda: recorded(model, x),
    }
    if args.baseline:
        baseline = baseline_package(args.baseline).WorkloadRecorder
        sides["baseline recorder, depth 0"] = lambda: recorded(model, x, baseline)
    times: dict[str, list[int]] = {name: [] for name in sides}
    with torch.no_grad():
        fastest(model, x, 200)
        for _ in range(args.rounds):
            for name, side in sides.items():
                times[name].append(side())
    plain = times["plain"]
    rows = []
    for name, values in times.items():
        extra = [(v - p) / 1e3 for v, p in zip(values, plain, strict=True)]
        rows.append([name, f"{median(values) / 1e3:.1f} µs", f"{median(extra):+.1f} µs"])
    print_header("Hook floor: linear-13, a root call with torch's hooks only")
    print(f"{args.rounds} rounds; fastest of 50 calls per side and round, thread CPU clock.\n")
    print(markdown_table(["side", "per call", "extra over plain (median of rounds)"], rows))


if __name__ == "__main__":
    main()
