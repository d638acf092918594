"""The deterministic costs of a traced call, and how the snapshot gate compares them."""

from __future__ import annotations

import importlib.util
import inspect
import os
from dataclasses import replace

import pytest
import torch
from torch import nn

from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._snapshot.diff import cost_lines, costs_agree
from pytest_workload._tracing.tracer import tracing
from pytest_workload._workload.costs import METRICS, Costs
from pytest_workload._workload.signature import InputSignature
from pytest_workload._workload.workload import ParamStats, Workload


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


def _entry(costs: Costs | None, *, data_dependent: bool = False) -> Workload:
    return Workload(
        name="m",
        class_name="M",
        depth=0,
        parent=None,
        input_signature=InputSignature(()),
        structure_hash="s" * 64,
        hash="h" * 64,
        params=ParamStats(0, 0),
        data_dependent=data_dependent,
        costs=costs,
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


class FakePeak:
    """An allocator's peak: 4 KiB above what was held as the call began."""

    def __init__(self, log: list[str]):
        self.log = log

    def begin(self):
        self.log.append("begin")

    def end(self):
        self.log.append("end")
        return 4096


def test_device_peak_is_read_over_the_traced_call():
    from pytest_workload import WorkloadRecorder
    from pytest_workload._perf.device import CpuDevice, substituted

    log: list[str] = []

    class Counted(CpuDevice):
        def peak(self):
            return FakePeak(log)

    model, x = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval(), torch.ones(1, 4)
    recorder = WorkloadRecorder("t", max_depth=1, timing=False)
    with substituted("cpu", Counted), recorder.recording(all_roots=True):
        model(x)
        model(x)
    recorder.measure(None)
    root, *subs = recorder.workloads().workloads
    assert root.costs is not None and root.costs["device_peak_bytes"] == 4096
    assert all(w.costs is not None and w.costs["device_peak_bytes"] is None for w in subs)
    # (once per traced call: the first, and the second that checks the operations repeat)
    assert log == ["begin", "end"] * 2
    assert Workload.from_snapshot(root.to_snapshot()).costs == root.costs


class Syncs(nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum().item() > 0:  # a value read: the list stops here
            y = y + 1
        y.cpu()  # a copy to the host: a sync, though no value enters Python
        torch.ones(2).sum().item()  # read of a constant: no sync
        y = y.float()  # a cast reads no values
        return y[y > 0]  # value-shaped


def _line(text: str) -> int:
    lines, start = inspect.getsourcelines(Syncs.forward)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_host_syncs_are_counted_by_site_over_the_whole_call():
    costs = _costs(Syncs(), torch.ones(4))
    path, cwd = os.path.abspath(__file__), os.getcwd()
    here = os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else path
    assert costs.partial
    assert costs["syncs"] == tuple(
        sorted(
            (f"{name} at {here}:{_line(text)}", 1)
            for name, text in (("item", ".item() > 0"), ("cpu", "y.cpu()"), ("getitem", "y[y"))
        )
    )


def _synced(*sites: tuple[str, int]) -> Costs:
    return Costs.of(bytes_read=1, bytes_written=1, peak_bytes=1, syncs=tuple(sorted(sites)))


ONE = _synced(("item at m.py:4", 1))
TWO = _synced(("item at m.py:4", 1), ("nonzero at m.py:9", 1))


def test_syncs_gate_by_count_and_name_the_sites_that_moved():
    old, new = _entry(ONE), _entry(TWO)
    assert not costs_agree(old, new, 0.0)
    assert costs_agree(old, new, 1.0)
    assert costs_agree(new, old, 0.0)
    assert list(cost_lines(old, new)) == ["syncs 1 -> 2: nonzero at m.py:9"]
    assert list(cost_lines(new, old)) == ["syncs 2 -> 1: nonzero at m.py:9"]
    none = _entry(_synced())
    assert list(cost_lines(none, new)) == ["syncs 0 -> 2: item at m.py:4, nonzero at m.py:9"]
    moved = _entry(_synced(("item at m.py:5", 1), ("nonzero at m.py:9", 1)))
    assert costs_agree(new, moved, 0.0) and list(cost_lines(new, moved)) == []


def test_syncs_are_over_the_whole_call_where_the_other_costs_are_not():
    partial = replace(TWO, partial=True)
    assert list(cost_lines(_entry(ONE), _entry(partial)))[-1] == (
        "costs (but syncs) are over the operations before the first that follows the data"
    )


def test_syncs_are_stored_only_where_there_are_some():
    assert "syncs" not in OLD.to_dict()
    assert Costs.from_dict(OLD.to_dict()) == OLD
    assert TWO.to_dict()["syncs"] == {"item at m.py:4": 1, "nonzero at m.py:9": 1}
    assert Costs.from_dict(TWO.to_dict()) == TWO
    with pytest.raises(TypeError, match="not cost metrics: sync"):
        Costs.of(sync=())
    with pytest.raises(WorkloadDataError, match="'syncs' must map names to counts > 0"):
        Costs.from_dict({**TWO.to_dict(), "syncs": {"item at m.py:4": 0}})


def test_a_sync_outside_the_rootdir_is_named_by_its_module_path(tmp_path, monkeypatch):
    package = tmp_path / "site" / "synczoo"
    package.mkdir(parents=True)
    source = package / "model.py"
    source.write_text(
        "from torch import nn\n\n\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x * x.sum().item()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = importlib.util.spec_from_file_location("synczoo_model", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, x = module.M(), torch.ones(2)
    with torch.no_grad(), tracing(model, (x,), str(tmp_path / "project")) as trace:
        model(x)
    costs = trace.root().costs
    assert costs is not None
    assert costs["syncs"] == ((f"item at {os.path.join('synczoo', 'model.py')}:6", 1),)
