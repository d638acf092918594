"""The device allocator's peak over a traced call (CUDA), beside the counted peak.

The peak counter is reset where the call begins: left as it was, an earlier peak would hide
the call's, so the number would depend on what ran before it. A test that reads
``torch.cuda.max_memory_allocated`` across a recorded workload's first call therefore reads
the peak since that call began (the replays, which measure the same way, already reset it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import torch


class DeviceMemory(Protocol):
    """The allocator counters of one device."""

    def synchronize(self) -> None: ...
    def reset_peak(self) -> None: ...
    def allocated(self) -> int: ...
    def peak(self) -> int: ...


class CudaMemory:
    def __init__(self, device: torch.device) -> None:
        self.device = device

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.device)

    def reset_peak(self) -> None:
        import torch

        torch.cuda.reset_peak_memory_stats(self.device)

    def allocated(self) -> int:
        import torch

        return int(torch.cuda.memory_allocated(self.device))

    def peak(self) -> int:
        import torch

        return int(torch.cuda.max_memory_allocated(self.device))


def device_memory(device: torch.device) -> DeviceMemory | None:
    """The counters of ``device``; None where it has none this measures (CPU, MPS)."""
    return CudaMemory(device) if device.type == "cuda" else None


class DevicePeak:
    """Bytes the allocator held above what it held when :meth:`begin` ran, at most."""

    def __init__(self, memory: DeviceMemory) -> None:
        self.memory = memory
        self._base = 0

    def begin(self) -> None:
        self.memory.synchronize()
        self.memory.reset_peak()
        self._base = self.memory.allocated()

    def end(self) -> int:
        self.memory.synchronize()
        return max(self.memory.peak() - self._base, 0)
