"""Measuring a top-level workload by replaying its first recorded call after the test.

One replay counts FLOPs (``torch.utils.flop_counter``: shape-based, so identical on every
machine); on CUDA another measures peak memory; then, unless timing is off, the call is timed
adaptively on its device. Replays run under ``no_grad`` with the RNG forked, and every buffer
(BatchNorm running statistics, counters) is put back afterwards, so the model leaves the replay
as it entered it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._model.timing import Timing
from .timing import TimingPolicy, pin_allocator, stopwatch_for, time_call

if TYPE_CHECKING:
    import torch
    from torch import nn


@dataclass(frozen=True)
class Measurement:
    """What a replay found; ``problem`` says why something is missing."""

    timing: Timing | None = None
    flops: int | None = None
    peak_memory_bytes: int | None = None
    problem: str | None = None


def device_of(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.device:
    """Where a call runs: the module's first parameter or buffer, else its first tensor input."""
    import torch

    for tensor in (*module.parameters(), *module.buffers()):
        return tensor.device
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


@contextmanager
def _restored(module: nn.Module, device: torch.device) -> Iterator[None]:
    import torch

    saved = [(b, b.detach().clone()) for b in module.buffers()]
    cuda = [device.index or 0] if device.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=cuda), torch.no_grad():
            yield
    finally:
        with torch.no_grad():
            for buffer, copy in saved:
                buffer.copy_(copy)


def count_flops(target: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False, custom_mapping=_cpu_attention_formula()) as counter:
        target(*args, **kwargs)
    return int(counter.get_total_flops())


def _cpu_attention_formula() -> dict[Any, Any]:
    """torch counts fused attention only for its CUDA kernels, so under ``no_grad`` a CPU
    ``scaled_dot_product_attention`` would count 0 and FLOPs (which enter the snapshot) would
    depend on the machine. Its CPU kernel gets CUDA's formula; torch versions without that
    kernel run attention as matmuls, which are counted already."""
    import torch
    from torch.utils import flop_counter

    formula = getattr(flop_counter, "sdpa_flop_count", None)
    kernel = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if formula is None or kernel is None:
        return {}
    return {kernel: lambda query, key, value, *_, **__: formula(query, key, value)}


def _peak_memory(call: Any, device: torch.device) -> int:
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    call()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device) - before)


def replay(
    module: nn.Module,
    target: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    policy: TimingPolicy | None,
) -> Measurement:
    """Measure one call of ``module`` (as called) whose unwrapped module is ``target``.

    FLOPs are counted on ``target`` (a compiled wrapper would recompile under the counter);
    timing uses ``module``, so a compiled model is timed compiled. ``policy=None`` skips timing.
    """
    device = device_of(target, args, kwargs)
    flops = peak = timing = None
    try:
        with _restored(target, device):
            flops = count_flops(target, args, kwargs)
            call = lambda: module(*args, **kwargs)  # noqa: E731
            if device.type == "cuda":
                peak = _peak_memory(call, device)
            if policy is not None:
                if device.type == "cpu":
                    pin_allocator()
                timing = time_call(call, stopwatch_for(device), policy, str(device))
    except Exception as exc:
        return Measurement(timing, flops, peak, f"replaying the call failed: {exc!r}")
    return Measurement(timing, flops, peak)
