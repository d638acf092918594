"""What the end-to-end (pytester) tests share: a small model suite and output matching."""

from __future__ import annotations

from collections.abc import Callable

import pytest

MODELS = """
import pytest
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, kernel=3):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, kernel, padding=kernel // 2)
        self.blocks = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(4, 2)

    def forward(self, x, scale=1.0):
        return self.head(self.blocks(self.stem(x)).mean(dim=(2, 3))) * scale
"""

TWO_SHAPES = """
@pytest.mark.workloads(max_depth=1)
def test_two_shapes():
    model = Net(KERNEL).eval()
    model(torch.rand(1, 3, 8, 8))
    model(torch.rand(1, 3, SIZE, SIZE))
    model(torch.rand(1, 3, 8, 8))
"""

#: Inner runs time little and gate no timing unless a test asks: hash tests stay fast and
#: can never fail on a noisy timing.
SUITE_INI = """
[pytest]
workload_time_budget = 0.01
workload_perf = off
"""

#: How the inner runs distribute tests: the plugin must behave the same in each.
XDIST_MODES = {"no-xdist": ("-p", "no:xdist"), "n0": ("-n", "0"), "n2": ("-n", "2")}


def two_shapes(size: int = 16) -> str:
    return TWO_SHAPES.replace("SIZE", str(size))


def lit(*patterns: str) -> list[str]:
    """fnmatch patterns where only * and ? are wildcards: brackets are shapes, not classes."""
    return [p.replace("[", "[[]") for p in patterns]


def compiled_suite(pytester: pytest.Pytester, model: str, call: str) -> Callable[..., None]:
    """A writer of ``test_net.py`` from ``model``'s text: ``BODY`` (a line of the forward),
    ``CALL`` (``call`` by default), ``BACKEND`` and ``NAME`` (one test per name) filled in."""
    pytester.makeini(SUITE_INI)

    def write(body: str = "pass", call: str = call, backend: str = "eager", names=("",)) -> None:
        tests = (
            model.replace("NAME", name)
            .replace("BODY", body)
            .replace("CALL", call)
            .replace("BACKEND", backend)
            for name in names
        )
        pytester.makepyfile(test_net="\n\n".join(tests))

    return write


def stored_snapshots(pytester: pytest.Pytester, *args: str, passed: int = 1) -> str:
    """Run an update; the text of every snapshot of ``test_net.py`` it wrote."""
    result = pytester.runpytest("--workload-snapshot", "--snapshot-update", *args)
    result.assert_outcomes(passed=passed)
    stored = sorted((pytester.path / "__workload_snapshots__" / "test_net").iterdir())
    return "".join(path.read_text() for path in stored)
