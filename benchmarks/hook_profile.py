"""Where does the recorder spend its time on a repeated call? A profile of the hot path.

Each of the recorder's torch hooks (``_watch_call``, the global pre-hook that spots a new
root; ``_open_call``, the pre-hook given the call's kwargs that opens it; ``_enter``, the
forward pre-hook that opens a submodule's call; ``_exit``, the always-called forward hook that
describes and files a call) is wrapped with ``perf_counter_ns`` around it, and a timm model is
called ``--calls`` times inside ``recording(all_roots=True)`` with one input, so every call
after the first is the deduplicated hot path. The table gives each hook's median time per call.

It profiles the package it imports: to set two versions side by side, run it with
``PYTHONPATH`` pointing at a checkout (a ``git worktree``) of each, alternately, from outside
the repository (``python /path/to/benchmarks/hook_profile.py``, so that the working directory
does not shadow ``PYTHONPATH``).

Run: ``python benchmarks/hook_profile.py [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from typing import Any

import torch
from _common import markdown_table, median, print_header

import pytest_workload
from pytest_workload import WorkloadRecorder
from pytest_workload._recording.hooks import Hooks

HOOKS = ("_watch_call", "_open_call", "_enter", "_exit")


def wrap(name: str, spent: dict[str, list[int]]) -> Callable[[], None]:
    """Time one recorder hook; returns what puts the original back."""
    original = getattr(Hooks, name)

    @functools.wraps(original)
    def timed(self: Hooks, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent[name].append(time.perf_counter_ns() - start)

    setattr(Hooks, name, timed)
    return lambda: setattr(Hooks, name, original)


def profile(model: torch.nn.Module, x: torch.Tensor, calls: int, depth: int) -> dict[str, float]:
    spent: dict[str, list[int]] = {name: [] for name in HOOKS}
    restore = [wrap(name, spent) for name in HOOKS]
    try:
        with torch.no_grad():
            for _ in range(5):
                model(x)
            recorder = WorkloadRecorder("benchmarks::hook_profile", max_depth=depth, timing=False)
            with recorder.recording(all_roots=True):
                for _ in range(calls):
                    model(x)
    finally:
        for undo in restore:
            undo()
    # the first call reads the structure: leave it (and its neighbours) out
    return {name: median(times[5:]) / 1e3 for name, times in spent.items() if times[5:]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 30 calls")
    parser.add_argument("--model", default="mobilenetv2_035", help="timm model name")
    parser.add_argument("--size", type=int, default=224, help="input height and width")
    parser.add_argument("--calls", type=int, default=None, help="recorded calls (default 200)")
    parser.add_argument("--depth", type=int, default=0, help="max_depth of the recording")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args(argv)
    calls = args.calls or (30 if args.quick else 200)
    torch.set_num_threads(args.threads)
    import timm

    model = timm.create_model(args.model, pretrained=False).eval()
    x = torch.rand(1, 3, args.size, args.size)
    medians = profile(model, x, calls, args.depth)
    print_header("Recorder hot path: time inside each hook per repeated call")
    print(
        f"{args.model} @ 1x3x{args.size}x{args.size}, max_depth={args.depth}, {calls} calls, "
        f"torch {args.threads} thread(s); package: {pytest_workload.__file__}\n"
    )
    rows = [[name, f"{value:.1f} µs"] for name, value in medians.items()]
    rows.append(["all hooks", f"{sum(medians.values()):.1f} µs"])
    print(markdown_table(["hook", "median per call"], rows))


if __name__ == "__main__":
    main()
