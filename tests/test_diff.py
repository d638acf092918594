from dataclasses import replace

import torch
from torch import nn

from pytest_workload import WorkloadRecorder
from pytest_workload._compile.health import CompileHealth, GraphBreak, Readiness
from pytest_workload._fingerprint.describe import describe_args, describe_kwargs
from pytest_workload._snapshot.diff import compare_tables, explain, named, tables_match
from pytest_workload._snapshot.part_diff import diff_signatures
from pytest_workload._snapshot.verdict import signature_changes
from pytest_workload._workload.signature import InputSignature
from pytest_workload._workload.workload import TestWorkloads
from tests.models import TinyNet


def document(calls, max_depth=1):
    """The folded table, without module descriptions: changes are worded from the rows."""
    recorder = WorkloadRecorder("t", max_depth=max_depth)
    with recorder.recording(all_roots=True):
        calls()
    return replace(recorder.workloads().folded(), modules={})


def changed(old, new):
    """The one change between two tables, a pair of workloads, and the lines that explain it."""
    ((a, b),) = compare_tables(old, new)
    assert a is not None and b is not None
    return explain(a, b, old, new)


def sig(*args, **kwargs):
    return InputSignature(describe_args(args), describe_kwargs(kwargs))


def with_flops(doc, *flops):
    """The table's rows, repeated as needed, with the given FLOP counts."""
    entries = (doc.workloads * len(flops))[: len(flops)]
    return replace(
        doc, workloads=tuple(replace(e, flops=f) for e, f in zip(entries, flops, strict=True))
    )


def test_identical_tables_match_in_any_order():
    model, x, y = TinyNet().eval(), torch.rand(1, 3, 8, 8), torch.rand(1, 3, 4, 4)
    a = document(lambda: [model(x), model(y)])
    b = document(lambda: [model(y), model(x)])
    assert tables_match(a, b)
    assert compare_tables(a, b) == []


def test_shape_change_names_the_argument_and_both_shapes():
    model = TinyNet().eval()
    old = document(lambda: model(torch.rand(1, 3, 8, 8)), max_depth=0)
    new = document(lambda: model(torch.rand(1, 3, 16, 8)), max_depth=0)
    assert changed(old, new) == [
        "same structure at a scaled shape: 2x the stored workload (distance factor 2)",
        "input args[0] (x): shape [1, 3, 8, 8] -> [1, 3, 16, 8]",
    ]


def test_structure_change_lists_the_changed_submodule_paths():
    x = torch.rand(1, 3, 8, 8)
    old = document(lambda: TinyNet().eval()(x), max_depth=1)
    changed = TinyNet().eval()
    changed.blocks[1] = nn.GELU()
    new = document(lambda: changed(x), max_depth=1)
    changes = {named(*pair).name: pair for pair in compare_tables(old, new)}
    assert set(changes) == {"changed", "blocks"}
    root = explain(*changes["changed"], old, new)  # the root is named after its variable
    assert root[0].startswith("structure changed (structure hash ")
    assert root[1] == "submodules whose structure changed: blocks, blocks.1"


def test_unchanged_child_under_a_changed_caller_is_not_reported():
    model = TinyNet().eval()
    old = document(lambda: model(torch.rand(1, 3, 8, 8), scale=1.0))
    new = document(lambda: model(torch.rand(1, 3, 8, 8), scale=2.0))
    assert [named(*pair).name for pair in compare_tables(old, new)] == ["model"]
    assert changed(old, new) == ["input kwargs['scale']: 1.0 -> 2.0"]


def test_appeared_and_vanished():
    a, b = nn.Linear(2, 2), nn.Linear(3, 3)
    old = document(lambda: a(torch.rand(1, 2)))
    new = document(lambda: b(torch.rand(1, 3)))
    pairs = [(a and a.name, b and b.name) for a, b in compare_tables(old, new)]
    assert pairs == [(None, "b"), ("a", None)]


def test_an_appeared_workload_says_what_its_compile_checks_found():
    a, b = nn.Linear(2, 2), nn.Linear(3, 3)
    old, new = document(lambda: a(torch.rand(1, 2))), document(lambda: b(torch.rand(1, 3)))
    broke = CompileHealth(breaks=(GraphBreak("m.py:3", "forward", "GB0059", "builtin"),))
    checked = replace(
        new.workloads[0],
        compile_health=broke,
        compile_readiness=Readiness("eager", CompileHealth(eager_frames=1)),
    )
    new = replace(new, workloads=(checked,))
    ((_, appeared), (vanished, _)) = compare_tables(old, new)
    assert appeared is checked and vanished is not None
    assert explain(None, appeared, old, new) == [
        "graph breaks 0 -> 1: new break at m.py:3 in forward (builtin [GB0059])",
        "compile readiness (eager): frames run eagerly 0 -> 1",
    ]


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


def test_an_unknown_flop_count_is_a_difference():
    model = TinyNet().eval()
    table = document(lambda: model(torch.rand(1, 3, 8, 8)), max_depth=0)
    known, unknown = with_flops(table, 32), with_flops(table, None)
    assert not tables_match(known, unknown) and not tables_match(unknown, known)
    assert changed(known, unknown) == ["FLOPs 32 -> unknown"]
    assert tables_match(unknown, with_flops(table, None))
    doubled = with_flops(table, 64)
    assert not tables_match(known, doubled)
    assert changed(known, doubled) == ["FLOPs 32 -> 64"]


def test_flop_counts_pair_up_equal_counts_in_any_order():
    model = TinyNet().eval()
    table = document(lambda: model(torch.rand(1, 3, 8, 8)), max_depth=0)
    assert tables_match(with_flops(table, 32, 64), with_flops(table, 64, 32))
    assert not tables_match(with_flops(table, 32, None), with_flops(table, None, 64))
    assert not tables_match(with_flops(table, 32, 32), with_flops(table, 64, 32))


def test_a_parameter_dtype_change_is_named_as_one():
    model, x = TinyNet().eval(), torch.rand(1, 3, 8, 8)
    old = document(lambda: model(x), max_depth=0)
    model.to(torch.bfloat16)
    new = document(lambda: model(x.to(torch.bfloat16)), max_depth=0)
    assert changed(old, new) == [
        "parameter dtype float32 -> bfloat16 (structure otherwise the same)",
        "input args[0] (x): dtype float32 -> bfloat16",
        "parameter bytes 1,112 -> 556",
    ]


def test_a_dtype_change_beside_another_change_is_a_structure_change():
    model, x = TinyNet().eval(), torch.rand(1, 3, 8, 8)
    old = document(lambda: model(x), max_depth=0)
    model = TinyNet(kernel=5).eval().to(torch.bfloat16)
    lines = changed(old, document(lambda: model(x.bfloat16()), max_depth=0))
    assert lines[0].startswith("structure changed (structure hash ")
    assert lines[1:3] == [
        "submodules whose structure changed: blocks, head, stem",
        "parameter dtype float32 -> bfloat16",
    ]


def test_a_snapshot_without_dtypes_says_structure_changed():
    model, x = TinyNet().eval(), torch.rand(1, 3, 8, 8)
    stored = document(lambda: model(x), max_depth=0)
    data = stored.to_snapshot()
    for entry in data["workloads"]:
        entry["params"]["dtypes"] = entry["structure_hash_without_dtypes"] = None
    older = TestWorkloads.from_snapshot(data)
    assert older.workloads[0].params.dtypes is None
    model.to(torch.bfloat16)
    lines = changed(older, document(lambda: model(x.bfloat16()), max_depth=0))
    assert lines[0].startswith("structure changed (structure hash ")


def stack(count: int) -> nn.Module:
    return nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(count)])


def test_identical_stacks_under_two_names_are_one_entry_with_two_patterns():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = stack(2), stack(2)

        def forward(self, x):
            return self.b(self.a(x) * 2)

    model = Two()
    doc = document(lambda: model(torch.rand(2, 4)), max_depth=2)
    assert [e.label for e in doc.workloads] == ["model", "a, b", "a.[0-1], b.[0-1]"]


def root_document(*kwargs_per_call, model=None):
    """A document of TinyNet roots, one call per keyword dict (max_depth=0, as
    --workload-record=all records an unmarked test)."""
    model = model or TinyNet().eval()
    x = torch.rand(1, 3, 8, 8)
    return document(lambda: [model(x, **kw) for kw in kwargs_per_call], max_depth=0)


def test_a_signature_that_followed_the_data_is_named_both_ways():
    plain, scaled = root_document({}), root_document({"scale": 2.0})
    assert not tables_match(plain, scaled)
    assert signature_changes(plain, scaled) == [
        "model (tests.models.TinyNet): input kwargs['scale'] added: 2.0"
    ]
    assert signature_changes(scaled, plain) == [
        "model (tests.models.TinyNet): input kwargs['scale'] removed (was 2.0)"
    ]


def test_a_signature_added_beside_the_stored_one_is_a_signature_change():
    old, new = root_document({}), root_document({}, {"scale": 2.0})
    assert signature_changes(old, new) == [
        "model (tests.models.TinyNet): input kwargs['scale'] added: 2.0"
    ]
    assert signature_changes(new, old) == [
        "model (tests.models.TinyNet): input kwargs['scale'] removed (was 2.0)"
    ]


def test_matching_tables_have_no_signature_change():
    assert signature_changes(root_document({}), root_document({})) == []


def test_a_structure_change_is_more_than_a_signature_change():
    plain = root_document({})
    assert signature_changes(plain, root_document({}, model=TinyNet(channels=8).eval())) is None
    other = root_document({"scale": 2.0}, model=TinyNet(channels=8).eval())
    assert signature_changes(plain, other) is None


def test_a_workload_whose_structure_the_other_side_lacks_is_more_than_a_signature_change():
    old = root_document({})
    new = document(
        lambda: [
            TinyNet().eval()(torch.rand(1, 3, 8, 8), scale=2.0),
            nn.Linear(2, 2)(torch.rand(1, 2)),
        ],
        max_depth=0,
    )
    assert signature_changes(old, new) is None


def test_a_computation_change_on_both_sides_is_more_than_a_signature_change():
    old, new = root_document({}), root_document({}, {"scale": 2.0})
    kept = next(e for e in new if not e.input_signature.kwargs)
    changed = replace(kept, compute_hash="0" * 64)
    edited = replace(new, workloads=tuple(changed if e is kept else e for e in new))
    assert signature_changes(old, new) is not None
    assert signature_changes(old, edited) is None


def test_each_signature_is_set_against_the_stored_one_it_differs_least_from():
    model = TinyNet().eval()
    small, large = torch.rand(1, 3, 8, 8), torch.rand(1, 3, 16, 8)
    old = document(lambda: [model(small), model(large)], max_depth=0)
    new = document(lambda: [model(small, scale=2.0), model(large, scale=2.0)], max_depth=0)
    assert signature_changes(old, new) == [
        "model (tests.models.TinyNet): input kwargs['scale'] added: 2.0"
    ]
