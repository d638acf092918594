import torch
from torch import nn

from pytest_workload import (
    SnapshotDocument,
    SnapshotEntry,
    WorkloadRecorder,
    compare_documents,
    documents_match,
)
from pytest_workload.diff import diff_signatures
from pytest_workload.signature import InputSignature, describe_args, describe_kwargs
from tests.models import TinyNet


def document(calls, max_depth=1, scheme=1):
    recorder = WorkloadRecorder("t", max_depth=max_depth)
    with recorder.recording(all_roots=True):
        calls()
    return SnapshotDocument(scheme, tuple(SnapshotEntry.from_workload(w) for w in recorder))


def sig(*args, **kwargs):
    return InputSignature(describe_args(args), describe_kwargs(kwargs))


def test_identical_tables_match_in_any_order():
    model, x, y = TinyNet().eval(), torch.rand(1, 3, 8, 8), torch.rand(1, 3, 4, 4)
    a = document(lambda: [model(x), model(y)])
    b = document(lambda: [model(y), model(x)])
    assert documents_match(a, b)
    assert compare_documents(a, b) == []


def test_another_scheme_never_matches():
    model, x = TinyNet().eval(), torch.rand(1, 3, 8, 8)
    assert not documents_match(document(lambda: model(x)), document(lambda: model(x), scheme=2))


def test_shape_change_names_the_argument_and_both_shapes():
    model = TinyNet().eval()
    old = document(lambda: model(torch.rand(1, 3, 8, 8)), max_depth=0)
    new = document(lambda: model(torch.rand(1, 3, 16, 8)), max_depth=0)
    (change,) = compare_documents(old, new)
    assert change.kind == "changed"
    assert change.details == (
        "same structure at a scaled shape: 2x the stored workload (distance factor 2)",
        "input args[0] (x): shape [1, 3, 8, 8] -> [1, 3, 16, 8]",
    )


def test_structure_change_lists_the_changed_submodule_paths():
    x = torch.rand(1, 3, 8, 8)
    old = document(lambda: TinyNet().eval()(x), max_depth=1)
    changed = TinyNet().eval()
    changed.blocks[1] = nn.GELU()
    new = document(lambda: changed(x), max_depth=1)
    changes = {c.entry.name: c for c in compare_documents(old, new)}
    assert set(changes) == {"changed", "blocks"}
    root = changes["changed"]  # the root is named after its variable
    assert root.details[0].startswith("structure changed (structure hash ")
    assert root.details[1] == "submodules whose structure changed: blocks, blocks.1"


def test_unchanged_child_under_a_changed_caller_is_not_reported():
    model = TinyNet().eval()
    old = document(lambda: model(torch.rand(1, 3, 8, 8), scale=1.0))
    new = document(lambda: model(torch.rand(1, 3, 8, 8), scale=2.0))
    changes = compare_documents(old, new)
    assert [c.entry.name for c in changes] == ["model"]
    assert changes[0].details == ("input kwargs['scale']: 1.0 -> 2.0",)


def test_appeared_and_vanished():
    a, b = nn.Linear(2, 2), nn.Linear(3, 3)
    old = document(lambda: a(torch.rand(1, 2)))
    new = document(lambda: b(torch.rand(1, 3)))
    kinds = sorted((c.kind, c.entry.name) for c in compare_documents(old, new))
    assert kinds == [("appeared", "b"), ("vanished", "a")]


def test_signature_diffs_say_what_changed():
    assert diff_signatures(sig(torch.zeros(2)), sig(torch.zeros(2, dtype=torch.half))) == [
        "input args[0]: dtype float32 -> float16"
    ]
    assert diff_signatures(sig(use_cache=True), sig(use_cache=False)) == [
        "input kwargs['use_cache']: True -> False"
    ]
    assert diff_signatures(sig(1), sig(True)) == ["input args[0]: 1 -> True"]
    assert diff_signatures(sig(), sig(mask=None)) == ["input kwargs['mask'] added: None"]
    assert diff_signatures(sig((torch.zeros(1), 2)), sig((torch.zeros(1), 3))) == [
        "input args[0][1]: 2 -> 3"
    ]
    assert diff_signatures(sig(1), sig(1, 2)) == ["input: 1 -> 2 positional arguments"]
