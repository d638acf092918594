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
* **the recorder's hooks, no work**: the recorder's hook design done by hand, with nothing
  recorded: two global pre-hooks (a watch that asks whether dynamo compiles and, on the
  recording thread, hands the call's kwargs to the second by naming it in the module's table
  of pre-hooks given kwargs), both taken out of torch's table as the root opens, the root's
  pre-hook and always-called forward hook put in, and all of it undone as it returns;
* **... + the same-workload checks**: the same, with the checks a settled root's call must
  pass, made by the package's own functions: whether a tracer runs, the raw inputs' key
  compared with the settled call's, and the identity looked up again (the first parameter's
  dtype and device, the mode, and the attribute watch over all 13 modules);
* **recorder**: ``WorkloadRecorder(timing=False).recording(all_roots=True)`` at depth 0, its
  root settled (the calls timed are past its first five).

The third side is the floor of torch's hooks; the fifth is the floor of the recorder's design
with its checks, before it counts a call or guards against its own failures; the recorder
minus the fifth is the rest of its work per root call. ``--baseline CHECKOUT`` adds a last
side, the recorder of another checkout of this repository (say, main), timed in the same
rounds.

Run: ``python benchmarks/hook_floor.py [--rounds 25] [--baseline ../main]``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch
from _common import baseline_package, markdown_table, median, print_header
from torch import nn
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.utils.hooks import RemovableHandle

from pytest_workload import WorkloadRecorder
from pytest_workload._fingerprint.describe import describe_args, describe_kwargs, inputs_key
from pytest_workload._fingerprint.structure import CURRENT_SCHEME
from pytest_workload._recording.identity import IdentityCache
from pytest_workload._torch_internals import compiling_check, tracing_checks


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


class DesignFloor:
    """The recorder's hooks by hand, doing no work (``checks``: with a settled root's checks)."""

    def __init__(self, model: nn.Module, x: torch.Tensor, checks: bool) -> None:
        self.checks = checks
        self.frames: list[nn.Module] = []
        self.thread, self.compiling, self.tracing = threading.get_ident(), compiling_check(), None
        self.cache = IdentityCache(None, CURRENT_SCHEME)
        self.key = repr((describe_args((x,)), describe_kwargs({})))
        self.raw = inputs_key((x,), {})
        self.identity = self.cache.identity(
            model, (describe_args((x,)), describe_kwargs({})), self.key, ((x,), {}), None
        )
        if checks:
            self.tracing = tracing_checks()
        self.hook_key = RemovableHandle(OrderedDict()).id
        self.handles = [register_module_forward_pre_hook(h) for h in (self.watch, self.open)]
        self.watch_key, self.open_key = self.handles[0].id, self.handles[1].id
        self.table = self.handles[0].hooks_dict_ref()

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()

    def watch(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if self.compiling():
            return
        if (
            not self.frames
            and threading.get_ident() == self.thread
            and not (self.tracing is not None and self.tracing())
        ):
            module._forward_pre_hooks_with_kwargs[self.open_key] = True

    def open(self, module: nn.Module, args: tuple[Any, ...], kwargs: Any = None) -> None:
        if kwargs is None:
            return
        module._forward_pre_hooks_with_kwargs.pop(self.open_key, None)
        if self.checks:
            same = inputs_key(args, kwargs) == self.raw
            keyed = self.cache.key(module, self.key, (args, kwargs)) == self.identity.key
            assert same and keyed and self.identity.watch.unchanged()  # (it never changes here)
        del self.table[self.watch_key], self.table[self.open_key]
        self.frames.append(module)
        key = self.hook_key
        module._forward_pre_hooks[key] = _nothing
        module._forward_pre_hooks_with_kwargs[key] = True
        module._forward_hooks[key] = self.exit
        module._forward_hooks_with_kwargs[key] = True
        module._forward_hooks_always_called[key] = True

    def exit(self, module: nn.Module, args: Any, kwargs: Any, result: Any) -> None:
        if self.frames and self.frames[-1] is module and threading.get_ident() == self.thread:
            assert sys.exc_info()[1] is None  # (a call that returned)
            self.frames.pop()
            key = self.hook_key
            for table in (
                module._forward_pre_hooks,
                module._forward_pre_hooks_with_kwargs,
                module._forward_hooks,
                module._forward_hooks_with_kwargs,
                module._forward_hooks_always_called,
            ):
                del table[key]
            self.table[self.watch_key], self.table[self.open_key] = self.watch, self.open


def designed(model: nn.Module, x: torch.Tensor, checks: bool) -> int:
    floor = DesignFloor(model, x, checks)
    try:
        return fastest(model, x)
    finally:
        floor.close()


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
        "the recorder's hooks, no work": lambda: designed(model, x, checks=False),
        "... + the same-workload checks": lambda: designed(model, x, checks=True),
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
