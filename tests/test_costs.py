"""The deterministic costs of a traced call, and how the snapshot gate compares them."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._snapshot.document import SnapshotEntry
from pytest_workload._snapshot.part_diff import cost_lines, costs_agree
from pytest_workload._tracing.tracer import tracing
from pytest_workload._workload.costs import METRICS, Costs


def _costs(module: nn.Module, *args: torch.Tensor) -> Costs:
    with torch.no_grad(), tracing(module, args) as trace:
        module(*args)
    costs = trace.root().costs
    assert costs is not None
    return costs


def test_two_layer_mlp_by_hand():
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    costs = _costs(mlp, torch.ones(2, 8))
    # linear: x 2*8, weight 16*8, bias 16 in; 2*16 out (float32: 4 bytes)
    first = ((2 * 8 + 16 * 8 + 16) * 4, 2 * 16 * 4)
    relu = (2 * 16 * 4, 2 * 16 * 4)
    second = ((2 * 16 + 4 * 16 + 4) * 4, 2 * 4 * 4)
    assert costs["bytes_read"] == first[0] + relu[0] + second[0]
    assert costs["bytes_written"] == first[1] + relu[1] + second[1]
    # the first layer's output is alive while relu writes its own; then it is freed
    assert costs["peak_bytes"] == 2 * (2 * 16 * 4)
    assert costs.ops == (("linear", 2), ("relu", 1))
    assert not costs.partial


class Views(nn.Module):
    def forward(self, x):
        y = x.view(4, 4).t()  # views: nothing moved or allocated
        y = y.contiguous()  # a copy: 64 bytes read, 64 written
        y.add_(1)  # in place: 64 read (and the 1), 64 written, nothing allocated
        return y


def test_views_move_nothing_and_in_place_allocates_nothing():
    costs = _costs(Views(), torch.ones(16))
    assert costs["bytes_read"] == 64 + 64
    assert costs["bytes_written"] == 64 + 64
    assert costs["peak_bytes"] == 64
    assert dict(costs.ops) == {"add_": 1, "contiguous": 1, "t": 1, "view": 1}


class KeepsAlive(nn.Module):
    def __init__(self, keep: bool):
        super().__init__()
        self.keep = keep

    def forward(self, x):
        a = x * 2
        b = a * 2
        if not self.keep:
            del a
        return b * 2


def test_peak_follows_when_tensors_are_freed():
    size = 256 * 4
    assert _costs(KeepsAlive(False), torch.ones(256))["peak_bytes"] == 2 * size
    assert _costs(KeepsAlive(True), torch.ones(256))["peak_bytes"] == 3 * size


class Stops(nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:  # follows the data: the list stops at the comparison
            y = torch.cat([y, y])
        return y


def test_costs_of_a_data_dependent_call_cover_the_listed_prefix():
    costs = _costs(Stops(), torch.ones(4))
    assert costs.partial
    assert "cat" not in dict(costs.ops)


def _entry(costs: Costs | None, *, data_dependent: bool = False) -> SnapshotEntry:
    return SnapshotEntry.from_dict(
        {
            "name": "m",
            "paths": ["m"],
            "class": "M",
            "depth": 0,
            "parent": None,
            "input": "",
            "input_signature": {"args": [], "kwargs": {}},
            "structure_hash": "s" * 64,
            "hash": "h" * 64,
            "submodules": {},
            "data_dependent": data_dependent,
            "costs": None if costs is None else costs.to_dict(),
        }
    )


MIB = 1 << 20
OLD = Costs.of((("linear", 3),), bytes_read=4 * MIB, bytes_written=2 * MIB, peak_bytes=MIB)
BIGGER = Costs.of(
    (("contiguous", 1), ("linear", 3)),
    bytes_read=4 * MIB,
    bytes_written=3 * MIB,
    peak_bytes=9 * MIB,
)


def test_growth_fails_beyond_the_tolerance_and_shrinking_never():
    assert costs_agree(_entry(OLD), _entry(OLD), 0.0)
    assert not costs_agree(_entry(OLD), _entry(BIGGER), 0.0)
    assert not costs_agree(_entry(OLD), _entry(BIGGER), 7.0)
    assert costs_agree(_entry(OLD), _entry(BIGGER), 8.0)
    assert costs_agree(_entry(BIGGER), _entry(OLD), 0.0)
    peak = next(m for m in METRICS if m.field == "peak_bytes")
    assert peak.grew(100, 101, 0.0) and not peak.grew(100, 105, 0.05) and peak.grew(100, 106, 0.05)


def test_unknown_agrees_as_a_compute_hash_does_and_data_dependent_is_not_compared():
    assert costs_agree(_entry(None), _entry(OLD), 0.0)
    assert costs_agree(_entry(OLD), _entry(None), 0.0)
    assert list(cost_lines(_entry(None), _entry(OLD))) == []
    on_cpu = Costs.of(bytes_read=1, bytes_written=1, peak_bytes=1)
    on_cuda = on_cpu.with_value("device_peak_bytes", 5)
    assert not costs_agree(_entry(on_cpu), _entry(on_cuda), 0.0)
    assert costs_agree(_entry(OLD, data_dependent=True), _entry(BIGGER), 0.0)
    assert list(cost_lines(_entry(OLD, data_dependent=True), _entry(BIGGER))) == []


def test_message_gives_each_moved_cost_old_to_new():
    assert list(cost_lines(_entry(OLD), _entry(BIGGER))) == [
        "peak memory 1.0 MiB -> 9.0 MiB (+8.0 MiB, 9.00x)",
        "bytes written 2.0 MiB -> 3.0 MiB (+1.0 MiB, 1.50x)",
        "operations +1 contiguous",
    ]


def test_costs_read_back_and_reject_bad_values():
    assert Costs.from_dict(BIGGER.to_dict()) == BIGGER
    partial = Costs.of(
        partial=True, bytes_read=1, bytes_written=2, peak_bytes=3, device_peak_bytes=4
    )
    assert Costs.from_dict(partial.to_dict()) == partial
    with pytest.raises(WorkloadDataError, match="peak_bytes"):
        Costs.from_dict({**OLD.to_dict(), "peak_bytes": -1})
    with pytest.raises(WorkloadDataError, match="ops"):
        Costs.from_dict({**OLD.to_dict(), "ops": {"relu": 0}})


class FakeMemory:
    """A device's counters: 100 bytes held before the call, 4 KiB more at its peak."""

    def __init__(self, log: list[str]):
        self.log = log

    def synchronize(self):
        self.log.append("synchronize")

    def reset_peak(self):
        self.log.append("reset_peak")

    def allocated(self):
        return 100

    def peak(self):
        return 100 + 4096


def test_device_peak_is_read_over_the_traced_call(monkeypatch):
    from pytest_workload import WorkloadRecorder
    from pytest_workload._recording import plan

    log: list[str] = []
    monkeypatch.setattr(plan, "device_memory", lambda device: FakeMemory(log))
    model, x = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval(), torch.ones(1, 4)
    recorder = WorkloadRecorder("t", max_depth=1, timing=False)
    with recorder.recording(all_roots=True):
        model(x)
        model(x)
    recorder.measure(None)
    root, *subs = recorder.workloads().workloads
    assert root.costs is not None and root.costs["device_peak_bytes"] == 4096
    assert all(w.costs is not None and w.costs["device_peak_bytes"] is None for w in subs)
    # (once per traced call: the first, and the second that checks the operations repeat)
    assert log == ["synchronize", "reset_peak", "synchronize"] * 2
    entry = SnapshotEntry.from_workload(root)
    assert SnapshotEntry.from_dict(entry.to_dict()).costs == root.costs
