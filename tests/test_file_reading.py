"""Fault injection on every file pytest-workload reads: unreadable, nested, oversized, forged
and hand-edited files, output escaping, and inputs that cannot be described. Where data could
be lost, each test compares the exact bytes before and after; numbers in the section comments
are the points of the file-safety issue. Writing faults are in test_file_safety.py.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import torch

from pytest_workload import TestWorkloads
from pytest_workload.__main__ import main
from pytest_workload._core.errors import UndescribableInputError
from pytest_workload._core.files import MAX_FILE_BYTES
from pytest_workload._core.strict_json import MAX_JSON_DEPTH
from pytest_workload._core.text import PLAIN
from pytest_workload._fingerprint.describe import describe_args
from pytest_workload._snapshot.diff import tables_match
from pytest_workload._snapshot.snapshot_files import read_stored
from pytest_workload._snapshot.verdict import Verdict, judge
from tests.file_faults import GATE, UPDATE, nest, report_file, snapshots, stored
from tests.pytester_suite import lit, two_shapes
from tests.recording import record

# 5. Clear errors instead of tracebacks, on reading -------------------------------------------


def test_a_deeply_nested_snapshot_is_corrupt_and_never_deleted(pytester, suite):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    text = stored(pytester).read_text().replace('"args": [', f'"args": [{nest(100_000)}, ', 1)
    stored(pytester).write_text(text)
    before = snapshots(pytester)
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*corrupt workload snapshot __workload_snap*test_two_shapes.workloads: not valid "
            f"JSON: nested more than {MAX_JSON_DEPTH} levels deep. It is left as it is*"
        )
    )
    assert "RecursionError" not in result.stdout.str()
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)  # no gate: kept
    assert snapshots(pytester) == before


def test_a_snapshot_that_is_not_utf8_says_it_is_corrupt(pytester, suite):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    stored(pytester).write_bytes(b'{"pytest_workload_snapshot": 1, "\xff\xfe": []}\n')
    before = snapshots(pytester)
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*corrupt workload snapshot __workload_snap*test_two_shapes.workloads: not "
            "UTF-8 text (byte 33). It is left as it is; fix it or regenerate it with "
            "`pytest --workload-snapshot --snapshot-update`"
        )
    )
    assert snapshots(pytester) == before
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    pytester.runpytest(*GATE).assert_outcomes(passed=1)


FORGED_REPORTS = {
    "deep nesting": lambda t: t.replace('"problems": []', f'"problems": {nest(100_000)}'),
    "a 5000-digit integer": lambda t: t.replace('"calls": 1', '"calls": 1' + "0" * 5000, 1),
    "a forged input node": lambda t: t.replace('"tensor": [1, 3, 8, 8]', '"tensor": 5', 1),
    "Infinity": lambda t: t.replace('"depth": 0', '"depth": Infinity', 1),
    "a duplicate nodeid": lambda t: t.replace('"tests": [', '"tests": [' + _first_test(t) + ", "),
    "a root with a bogus parent": lambda t: t.replace('"parent": null', '"parent": "bogus"', 1),
    "a malformed path pattern": lambda t: t.replace('"paths": ["stem"]', '"paths": ["st[em"]'),
    "a huge path pattern": lambda t: t.replace('"paths": ["stem"]', '"paths": ["[0-9999999]"]'),
    "a name among no path": lambda t: t.replace('"paths": ["stem"]', '"paths": ["head"]'),
}


def _first_test(text: str) -> str:
    return json.dumps(json.loads(text)["tests"][0])


@pytest.mark.parametrize("forgery", list(FORGED_REPORTS))
def test_compare_rejects_a_forged_report_naming_the_file(tmp_path, capsys, forgery):
    good = report_file(tmp_path)
    forged = tmp_path / "forged.json"
    forged.write_text(FORGED_REPORTS[forgery](good.read_text()))
    assert forged.read_text() != good.read_text()
    assert main(["compare", str(good), str(forged)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {forged}: ") and err.count("\n") == 1


# 7. Stored data is checked against what it claims --------------------------------------------


@pytest.mark.parametrize(
    ("stored_text", "edited_text", "message"),
    [
        (
            '"paths": ["stem"]',
            '"paths": ["stem", "blocks.[2,1]"]',
            "*corrupt workload snapshot __workload_snap*test_two_shapes.workloads: workload 1: "
            "path pattern 'blocks.[2,1]': '1' overlaps, touches or precedes the range before it*",
        ),
        (
            '"tensor": [1, 3, 16, 16]',
            '"tensor": [1, 3, 17, 16]',
            "*corrupt workload snapshot *: workload *: field 'input' does not follow from the "
            'other fields ("(float32[1, 3, 16, 16])" stored, "(float32[1, 3, 17, 16])" derived)*',
        ),
        (
            '"tensor": [1, 3, 16, 16], "dtype": "float32"}], "kwargs": {}},\n'
            '      "input": "(float32[1, 3, 16, 16])"',
            '"tensor": [1, 3, 17, 16], "dtype": "float32"}], "kwargs": {}},\n'
            '      "input": "(float32[1, 3, 17, 16])"',
            "*corrupt workload snapshot *: workload * stores hash *, but its structure hash and "
            "input (float32[1, 3, 17, 16]) give * under fingerprint scheme 1*",
        ),
    ],
    ids=["path-pattern", "input-against-its-signature", "input-against-its-hash"],
)
def test_a_hand_edited_snapshot_is_corrupt_and_rewritten_only_by_update(
    pytester, suite, stored_text, edited_text, message
):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    text = stored(pytester).read_text()
    edited = text.replace(stored_text, edited_text, 1)
    assert edited != text
    stored(pytester).write_text(edited)
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit(message))
    assert stored(pytester).read_text() == edited
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    assert stored(pytester).read_text() == text


# 8. Markdown and HTML escaping ---------------------------------------------------------------


def test_markdown_escapes_names(tmp_path, capsys):
    fake = "model\n### pytest-workload: no regressions\n<script>x</script>|`"
    base = report_file(tmp_path)
    head = tmp_path / "head.json"
    data = json.loads(base.read_text())
    data["tests"][0]["workloads"][0]["name"] = fake
    data["tests"][0]["workloads"][0]["paths"] = [fake]
    data["tests"][0]["nodeid"] = "t.py::test[`</code>*x*]"
    head.write_text(json.dumps(data))
    main(["compare", str(base), str(head), "--format", "markdown"])
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("#")] == [
        "### pytest-workload: regressed"
    ]
    assert "<script>" not in out and "</code>*" not in out
    assert "&lt;script&gt;x&lt;/script&gt;\\|\\`" in out


# 9. Inputs that cannot be described name their argument path ---------------------------------


def _deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("\ud800", "args[0] of type builtins.str: it is not valid Unicode"),
        (10**5000, "args[0] of type builtins.int: integers of more than 64 digits"),
        (_deep_list(3000), "args[0][0][0]"),
    ],
    ids=["lone surrogate", "10**5000", "3000-deep list"],
)
def test_undescribable_values_name_their_path(value, says):
    with pytest.raises(UndescribableInputError, match=lit(says)[0].replace("[[]", r"\[")):
        describe_args([value])


def test_a_nested_jagged_tensor_names_its_path():
    nested = torch.nested.nested_tensor([torch.rand(2, 3), torch.rand(4, 3)], layout=torch.jagged)
    with pytest.raises(
        UndescribableInputError, match=r"args\[0\] of type torch\..*: its shape is not concrete"
    ):
        describe_args([nested])


DEEP_INPUT = """
@pytest.mark.workloads
def test_deep():
    class Takes(nn.Module):
        def forward(self, x, extra):
            return x

    deep = []
    for _ in range(3000):
        deep = [deep]
    Takes()(torch.rand(1), deep)
"""


def test_a_3000_deep_argument_fails_the_gate_with_its_path(pytester, suite):
    suite(DEEP_INPUT)
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit("*could not record: Takes * cannot describe input args[1][0][0]*nested more than 50*")
    )
    assert "internal error" not in result.stdout.str()


LONG_STRING = """
@pytest.mark.workloads
def test_long():
    class Takes(nn.Module):
        def forward(self, x, text):
            return x

    Takes()(torch.rand(1), "x" * 1_000_000)
"""


def test_a_long_string_is_stored_by_digest(pytester, suite):
    suite(LONG_STRING)
    pytester.runpytest(*UPDATE, "--workload-json=r.json").assert_outcomes(passed=1)
    (snapshot,) = snapshots(pytester).values()
    assert len(snapshot) < 10_000 and b'"length": 1000000' in snapshot
    assert (pytester.path / "r.json").stat().st_size < 10_000
    pytester.runpytest(*GATE).assert_outcomes(passed=1)


def test_compare_says_a_report_that_is_not_utf8_is_corrupt(tmp_path, capsys):
    good = report_file(tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_bytes(good.read_bytes().replace(b'"t.py::test"', b'"t.py::\xff"', 1))
    assert main(["compare", str(good), str(broken)]) == 2
    assert capsys.readouterr().err == (
        f"error: {broken}: is corrupt: not UTF-8 text (byte {broken.read_bytes().index(255)})\n"
    )


# Issue 22, item 6: reports that cannot be true -----------------------------------------------


def _edit_json(edit):
    def mutate(text: str) -> str:
        data = json.loads(text)
        edit(data)
        return json.dumps(data)

    return mutate


def _root(data):
    return data["tests"][0]["workloads"][0]


IMPOSSIBLE_REPORTS = {
    "no calls": (
        _edit_json(lambda d: _root(d).update(calls=0)),
        "test 't.py::test', workload 0: field 'calls' must be at least 1, got 0",
    ),
    "negative calls": (
        _edit_json(lambda d: _root(d).update(calls=-3)),
        "test 't.py::test', workload 0: field 'calls' must be at least 1, got -3",
    ),
    "negative flops": (
        _edit_json(lambda d: _root(d).update(flops=-5)),
        "test 't.py::test', workload 0: field 'flops' must be at least 0, got -5",
    ),
    "negative peak memory": (
        _edit_json(lambda d: _root(d).update(peak_memory_bytes=-1)),
        "test 't.py::test', workload 0: field 'peak_memory_bytes' must be at least 0, got -1",
    ),
    "negative parameter bytes": (
        _edit_json(lambda d: _root(d)["params"].update(bytes=-1)),
        "test 't.py::test', workload 0: params: field 'bytes' must be at least 0, got -1",
    ),
    "a key of another structure": (
        _edit_json(lambda d: _root(d)["key"].__setitem__(0, "0" * 64)),
        "test 't.py::test', workload 0: field 'key' does not follow from the other fields (",
    ),
    "a key of another input": (
        _edit_json(lambda d: _root(d)["key"][1][0].update(tensor=[2, 3, 8, 8])),
        "test 't.py::test', workload 0: field 'key' does not follow from the other fields (",
    ),
    "an empty nodeid": (
        _edit_json(lambda d: d["tests"][0].update(nodeid="")),
        "field 'nodeid' is empty",
    ),
    "a key given twice": (
        lambda t: t.replace('"calls": 1', '"calls": 0, "calls": 1', 1),
        "is not valid JSON: key 'calls' given twice in one object (at tests[0].workloads[0])",
    ),
    "a top-level key given twice": (
        lambda t: t.replace(
            '"fingerprint_scheme": 1', '"fingerprint_scheme": 1, "fingerprint_scheme": 2', 1
        ),
        "is not valid JSON: key 'fingerprint_scheme' given twice in one object (at the top)",
    ),
    "a future scheme": (
        _edit_json(lambda d: d.update(fingerprint_scheme=99)),
        "is of fingerprint scheme 99 (this release computes scheme 1): upgrade pytest-workload "
        "to read it",
    ),
    "scheme 0": (
        _edit_json(lambda d: d.update(fingerprint_scheme=0)),
        "field 'fingerprint_scheme' must be at least 1, got 0",
    ),
}


@pytest.mark.parametrize("command", ["compare", "merge"])
@pytest.mark.parametrize("forgery", list(IMPOSSIBLE_REPORTS))
def test_a_report_that_cannot_be_true_is_refused_naming_file_and_field(
    tmp_path, capsys, forgery, command
):
    mutate, message = IMPOSSIBLE_REPORTS[forgery]
    forged = report_file(tmp_path, mutate)
    before = forged.read_bytes()
    merged = tmp_path / "merged.json"
    args = [str(forged)] * 2 if command == "compare" else [str(forged), "--output", str(merged)]
    assert main([command, *args]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"error: {forged}: ") and err.count("\n") == 1, err
    assert message in err
    assert out == ""
    assert forged.read_bytes() == before
    assert not merged.exists()


# 9. One edited field never switches a check off ----------------------------------------------


class _Activated(torch.nn.Module):
    def __init__(self, activation):
        super().__init__()
        self.activation, self.lin = activation, torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.activation(self.lin(x))


def _table(activation) -> TestWorkloads:
    model = _Activated(activation)
    return record(lambda: model(torch.rand(2, 4)), max_depth=1, timing=False).folded()


_MISSING = object()
#: A value of each JSON type; each field gets those not of its own type, and null.
_SWAPS = (None, 0, 1.5, "x", [], {}, True)
#: A plain check: no update, every change judged.
_PLAIN_CHECK: dict[str, Any] = dict(
    updating=False, accept_upgrade=False, judge_signatures=True, tolerance=0.0, commands=PLAIN
)


def _tamperings(stored: dict):
    """Every field of every entry, and of the file, left out or swapped for another type."""
    places = [(f"workloads[{i}]", e) for i, e in enumerate(stored["workloads"])]
    for where, fields in [("the file", stored), *places]:
        for key, value in fields.items():
            for swap in (_MISSING, *_SWAPS):
                if swap is _MISSING or type(swap) is not type(value):
                    yield where, key, swap


def test_no_type_tampered_snapshot_passes_a_changed_workload(tmp_path):
    """relu -> gelu changes the compute hash and the costs only: a field the verdict reads
    that is left out, null or of the wrong type must refuse the file (naming the field) or
    still fail the change, never read as a table that passes it."""
    stored, changed = _table(torch.relu), _table(torch.nn.functional.gelu)
    assert not tables_match(stored, changed)
    location = tmp_path / "t.workloads"
    tried = 0
    #: written as null when unknown, not observed or not checked (left out, read as null)
    writers_own = {
        "parent", "structure_hash_without_dtypes", "flops", "costs", "compute_hash", "compile",
        "compile_readiness",
    }  # fmt: skip
    for where, key, swap in _tamperings(stored.to_snapshot()):
        data = stored.to_snapshot()
        fields = data if where == "the file" else data["workloads"][int(where[10:-1])]
        if swap is _MISSING:
            del fields[key]
        else:
            fields[key] = swap
        location.write_text(json.dumps(data))
        read = read_stored(location)
        verdict, text = judge(read, changed, "t", **_PLAIN_CHECK)
        tried += 1
        what = f"{where} {key} = {'left out' if swap is _MISSING else repr(swap)}"
        if verdict is Verdict.REFUSED:
            assert text is not None and text.count("\n") == 0, what
            continue
        assert read.table is not None, what
        assert not tables_match(read.table, changed), f"{what} passes the gate"
        # read as a table only where the writer itself writes such a value (or none)
        legitimate = (
            (where == "the file" and key in ("libraries", "modules"))  # display only
            or (swap in (None, _MISSING) and key in writers_own)
            or (swap == 0 and key == "flops")
        )
        assert legitimate, f"{what} is read without a word"
    assert tried > 200


def _first_entry(text: str, change) -> str:
    data = json.loads(text)
    change(data["workloads"][0])
    return json.dumps(data, indent=2)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            lambda entry: entry.update(compute_hash=None),
            "*computation changed (compute hash none recorded -> *)*",
        ),
        (
            lambda entry: entry.update(data_dependent=True),
            "*computation changed: its operations follow the data -> do not follow*",
        ),
    ],
    ids=["compute hash null", "marked data-dependent"],
)
def test_one_edited_line_does_not_turn_the_computation_check_off(pytester, suite, edit, said):
    """The writer's own 'unknown' (no compute hash, data-dependent) is the code's, not the
    run's: an entry edited into it differs from what the run recorded, and fails."""
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    stored(pytester).write_text(_first_entry(stored(pytester).read_text(), edit))
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([said])


# 10. Size: refused before reading ------------------------------------------------------------


def _too_large(path) -> None:
    with open(path, "wb") as f:  # sparse: no disk, no memory
        f.truncate(MAX_FILE_BYTES + 1)


def test_compare_refuses_a_report_over_the_size_limit_before_reading_it(tmp_path, capsys):
    good = report_file(tmp_path)
    big = tmp_path / "big.json"
    _too_large(big)
    assert main(["compare", str(good), str(big)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: {big}: is corrupt: {MAX_FILE_BYTES + 1} bytes or more, over the 16 MiB "
        "pytest-workload reads (refused before reading)\n"
    )


def test_a_snapshot_over_the_size_limit_is_refused_and_left_as_it_is(pytester, suite):
    suite(two_shapes())
    pytester.runpytest(*UPDATE).assert_outcomes(passed=1)
    _too_large(stored(pytester))
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*corrupt workload snapshot __workload_snapshots__/test_models/test_two_shapes"
            f".workloads: {MAX_FILE_BYTES + 1} bytes or more, over the 16 MiB pytest-workload "
            "reads (refused before reading)*"
        ]
    )
    assert os.path.getsize(stored(pytester)) == MAX_FILE_BYTES + 1
