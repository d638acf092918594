"""The row table: calls aggregated per workload and calling row, with their timing."""

import torch
from torch import nn

from pytest_workload._fingerprint.structure import FingerprintScheme
from pytest_workload._workload.signature import InputSignature
from tests.models import twins
from tests.recording import record


def test_shared_submodules_and_module_lists():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
            self.shared = nn.Linear(4, 4, bias=False)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.shared(self.shared(x))

    table = record(lambda: Net()(torch.rand(2, 4)), max_depth=1)
    rows = [(w.name, w.paths, w.depth, w.calls) for w in table]
    assert rows == [
        ("Net", ("Net",), 0, 1),
        ("layers.0", ("layers.0", "layers.1"), 1, 2),
        ("shared", ("shared",), 1, 2),
    ]
    assert len({w.hash for w in table if w.depth == 1}) == 2


def test_identical_layers_are_one_row_with_every_path_and_their_calls_summed():
    model = nn.Sequential(*[nn.Sequential(*[nn.Linear(4, 4) for _ in range(3)]) for _ in range(4)])
    table = record(lambda: [model(torch.rand(2, 4)) for _ in range(3)], max_depth=2)
    root, blocks, layers = table.workloads
    assert (root.paths, root.calls) == (("model",), 3)
    assert blocks.paths == ("0", "1", "2", "3") and blocks.calls == 12
    assert layers.paths == tuple(f"{b}.{i}" for b in range(4) for i in range(3))
    assert layers.calls == 36 and (layers.caller, blocks.caller) == (1, 0)
    assert (blocks.label, layers.label) == ("[0-3]", "[0-3].[0-2]")
    # every path's untraced calls (the first two calls of the model are traced)
    assert layers.timing is not None and layers.timing.n == 12
    assert layers.total_time_s is not None and layers.total_time_s >= layers.timing.median_s
    assert layers.compute_hash is not None and not layers.data_dependent
    assert [w.label for w in table.children(blocks)] == ["[0-3].[0-2]"]


def test_a_path_that_ran_other_operations_marks_its_workload_data_dependent():
    class Gate(nn.Module):
        def forward(self, x, flag):
            return x.relu() if flag.item() else x.tanh()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gates = nn.ModuleList([Gate(), Gate()])

        def forward(self, x):
            return self.gates[1](self.gates[0](x, torch.tensor(1)), torch.tensor(0))

    root, gates = record(lambda: Net()(torch.rand(2, 4)), max_depth=1)
    assert gates.paths == ("gates.0", "gates.1") and gates.data_dependent
    assert not root.data_dependent  # one call: nothing to compare it with


def test_a_known_workload_at_a_new_path_in_an_untraced_call_marks_its_callers():
    class Depth(nn.Module):
        """Runs as many identical layers as its input asks for."""

        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers[: int(x[0, 0].item())]:
                x = layer(x)
            return x

    model = Depth()
    # the first two calls (traced) run two layers, the third (untraced) all three
    inputs = [torch.full((2, 4), n) for n in (2.0, 2.0, 3.0)]
    root, layers = record(lambda: [model(x) for x in inputs], max_depth=1)
    assert layers.paths == ("layers.0", "layers.1", "layers.2")
    assert root.data_dependent and not layers.data_dependent


def test_module_called_several_times_dedupes(tiny):
    x = torch.rand(1, 3, 8, 8)
    table = record(lambda: [tiny(x) for _ in range(5)], max_depth=1)
    assert {w.calls for w in table} == {5}


def test_identical_siblings_are_one_row_and_their_children_one_row_under_it():
    table = record(lambda: twins()(torch.rand(2, 4)), max_depth=2)
    (root,) = table.roots()
    (branch,) = table.children(root)
    assert (branch.paths, branch.calls) == (("a", "b"), 2)
    assert [(w.paths, w.calls) for w in table.children(branch)] == [
        (("a.0", "b.0"), 2),
        (("a.1", "b.1"), 2),
    ]
    rows = table.workloads
    assert [(w.label, None if w.caller is None else rows[w.caller].label) for w in rows] == [
        ("Sequential", None),
        ("a, b", "Sequential"),
        ("a.0, b.0", "a, b"),
        ("a.1, b.1", "a, b"),
    ]
    assert {w.parent for w in rows if w.depth == 2} == {branch.hash}  # the pinned field is a hash


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, scale):
        return self.fc(x) * scale


def test_children_of_two_workloads_of_one_kind_stay_under_their_own_caller():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = Scaled(), Scaled()

        def forward(self, x):
            return self.b(self.a(x, 1.0), 2.0)  # a and b: two workloads (scale is an input)

    rows = record(lambda: Net()(torch.rand(2, 4)), max_depth=2).workloads
    assert [(w.label, None if w.caller is None else rows[w.caller].label) for w in rows] == [
        ("Net", None),
        ("a", "Net"),
        ("a.fc", "a"),
        ("b", "Net"),
        ("b.fc", "b"),
    ]
    assert rows[2].hash == rows[4].hash and rows[1].hash != rows[3].hash


class KwargBlindScheme(FingerprintScheme):
    """A scheme whose hashes collapse: keyword arguments never reach them."""

    def workload_hash(self, structure, signature):
        return super().workload_hash(structure, InputSignature(signature.args))


def test_callers_that_share_a_hash_do_not_share_children(tiny):
    scheme = KwargBlindScheme(1)
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
