"""The row table: calls aggregated per workload and calling row, with their timing."""

import torch
from torch import nn

from pytest_workload import FingerprintScheme, InputSignature
from pytest_workload._identity.structure import structure_node
from tests.models import twins
from tests.recording import record


def test_shared_submodules_and_module_lists():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
            self.shared = nn.Linear(4, 4)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.shared(self.shared(x))

    table = record(lambda: Net()(torch.rand(2, 4)), max_depth=1)
    rows = [(w.name, w.depth, w.calls) for w in table]
    assert rows == [("Net", 0, 1), ("layers.0", 1, 1), ("layers.1", 1, 1), ("shared", 1, 2)]
    assert len({w.hash for w in table if w.depth == 1}) == 1


def test_module_called_several_times_dedupes(tiny):
    x = torch.rand(1, 3, 8, 8)
    table = record(lambda: [tiny(x) for _ in range(5)], max_depth=1)
    assert {w.calls for w in table} == {5}


def test_children_of_identical_siblings_stay_under_their_own_caller():
    table = record(lambda: twins()(torch.rand(2, 4)), max_depth=2)
    (root,) = table.roots()
    a, b = table.children(root)
    assert a.hash == b.hash
    assert [w.name for w in table.children(a)] == ["a.0", "a.1"]
    assert [w.name for w in table.children(b)] == ["b.0", "b.1"]
    rows = table.workloads
    assert [(w.name, None if w.caller is None else rows[w.caller].name) for w in rows] == [
        ("Sequential", None),
        ("a", "Sequential"),
        ("a.0", "a"),
        ("a.1", "a"),
        ("b", "Sequential"),
        ("b.0", "b"),
        ("b.1", "b"),
    ]
    assert {w.parent for w in rows if w.depth == 2} == {a.hash}  # the pinned field is a hash


class KwargBlindScheme(FingerprintScheme):
    """A scheme whose hashes collapse: keyword arguments never reach them."""

    def workload_hash(self, structure, signature):
        return super().workload_hash(structure, InputSignature(signature.args))


def test_callers_that_share_a_hash_do_not_share_children(tiny):
    scheme = KwargBlindScheme(1, structure_node)
    x = torch.rand(1, 3, 8, 8)
    table = record(lambda: [tiny(x, scale=1.0), tiny(x, scale=2.0)], max_depth=1, scheme=scheme)
    first, second = table.roots()
    assert first.hash == second.hash
    for root in (first, second):
        assert [(w.name, w.calls) for w in table.children(root)] == [
            ("stem", 1),
            ("blocks", 1),
            ("head", 1),
        ]


def test_submodules_off_the_cpu_report_no_timing():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    table = record(lambda: model(torch.rand(2, 4, device="meta")), max_depth=1)
    assert [(w.name, w.timing, w.total_time_s) for w in table] == [
        ("model", None, None),
        ("0", None, None),
        ("1", None, None),
    ]


def test_a_module_moved_off_the_cpu_between_calls_reports_no_timing():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    # (three calls: the first two are traced, and a traced call is not a timing)
    on_cpu = record(lambda: [model(torch.rand(2, 4)) for _ in range(3)], max_depth=1)
    assert [w.timing.device for w in on_cpu if w.depth == 1] == ["cpu", "cpu"]

    def calls():
        model(torch.rand(2, 4))
        model.to("meta")(torch.rand(2, 4, device="meta"))

    moved = record(calls, max_depth=1)
    assert [(w.calls, w.timing) for w in moved if w.depth == 1] == [(2, None), (2, None)]
