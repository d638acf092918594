"""Measuring a test's new top-level workloads once the test body has ended: one replay of
each workload's first call, in order, with what could not be measured said per workload."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .replay import Measurement, replay
from .timing import TimingPolicy

if TYPE_CHECKING:
    from torch import nn


@dataclass(frozen=True)
class RecordedCall:
    """A new workload's first call as the test made it (process-local, never stored)."""

    name: str
    class_name: str
    module: nn.Module
    target: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    #: The workload's hash, which the timing policy's suspect is asked about.
    workload_hash: str


def measure_calls(
    calls: Sequence[RecordedCall], policy: TimingPolicy | None
) -> tuple[list[Measurement], list[str]]:
    """A measurement per call (timing unless ``policy`` is None), and what could not be
    measured, one line per workload."""
    measurements, problems = [], []
    for call in calls:
        bound = None if policy is None else policy.for_workload(call.workload_hash)
        measured = replay(call.module, call.target, call.args, call.kwargs, bound)
        measurements.append(measured)
        if measured.problem is not None:
            problems.append(f"{call.name} ({call.class_name}): {measured.problem}")
    return measurements, problems
