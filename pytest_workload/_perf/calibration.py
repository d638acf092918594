"""The calibration kernel: a small fixed workload timed beside every replayed workload.

Its speed tracks the machine's (frequency, a neighbour's share of the caches and memory
bandwidth, a CPU quota), so the ratio of a workload's time to the kernel's, timed in
alternating blocks, divides out what moved them both. A mix of the operations models are
made of (a 3x3 convolution, a matrix product, an elementwise activation), about 0.3 ms on one
core of a 2026 x86 CPU. Its values come from a private generator, so building it leaves the
global random state alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@functools.cache
def calibration_kernel(device: str) -> Callable[[], object]:
    """The kernel on ``device`` (built once per process and device): call it to run it once."""
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(0)

    def tensor(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=generator, dtype=torch.float32).to(device)

    image, filters, bias = tensor(1, 8, 32, 32), tensor(16, 8, 3, 3), tensor(16)
    rows, weight = tensor(64, 256), tensor(256, 256)

    def run() -> object:
        with torch.no_grad():
            return (
                F.relu(F.conv2d(image, filters, bias, padding=1)).sum()
                + torch.tanh(rows @ weight).sum()
            )

    return run
