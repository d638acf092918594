"""Small models shared by the tests."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn


class TinyNet(nn.Module):
    """Conv stem, a block sequence and a head: enough tree for depth tests."""

    def __init__(self, channels: int = 4, kernel: int = 3, stride: int = 1) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, channels, kernel, stride=stride, padding=kernel // 2)
        self.blocks = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(channels)
        )
        self.head = nn.Linear(channels, 2)

    def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        x = self.blocks(self.stem(x))
        return self.head(x.mean(dim=(2, 3))) * scale


def twins() -> nn.Module:
    """Two identical branches, like two equal transformer layers."""
    torch.manual_seed(0)
    branch = [nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(2)]
    return nn.Sequential(OrderedDict(a=branch[0], b=branch[1]))
