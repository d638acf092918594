"""merge: shard reports in, one report out, with the session-wide checks across shards."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from pytest_workload import SessionReport, WorkloadError, WorkloadRecorder, read_report
from pytest_workload.__main__ import main
from pytest_workload._report.session_report import Shard, merge_reports, write_report
from tests.models import TinyNet
from tests.pytester_suite import MODELS, SUITE_INI

ENV = {"device": {"kind": "cpu", "name": "Test CPU", "index": None}, "torch": "2", "threads": 2}


def _class_key(module, args, kwargs):
    return type(module).__name__  # the bug: a key that forgets the input shape


def _test(nodeid, size, keyer=None):
    recorder = WorkloadRecorder(nodeid, timing=False, keyer=keyer)
    with recorder.recording(all_roots=True):
        TinyNet().eval()(torch.rand(1, 3, size, size))
    return recorder.workloads()


def _report(*tests, environment=ENV, problems=()):
    return SessionReport(scheme=1, tests=tests, environment=environment, problems=problems)


def test_tests_of_every_shard_in_shard_order():
    a, b = _report(_test("a.py::t", 8)), _report(_test("b.py::t", 16), _test("b.py::u", 8))
    merged = merge_reports([Shard("a.json", a), Shard("b.json", b)])
    assert [t.nodeid for t in merged.report.tests] == ["a.py::t", "b.py::t", "b.py::u"]
    assert merged.report.environment == ENV
    assert merged.collapses == ()


def test_a_user_key_shared_across_shards_is_a_collapse_naming_both():
    a = _report(_test("a.py::t", 8, _class_key))
    b = _report(_test("b.py::t", 16, _class_key))
    merged = merge_reports([Shard("a.json", a), Shard("b.json", b)])
    [(collapse, first, second)] = merged.collapses
    assert collapse.kind == "user key collapse"
    assert (collapse.first.nodeid, collapse.second.nodeid) == ("a.py::t", "b.py::t")
    assert (first, second) == ("a.json", "b.json")


def test_a_shared_hash_across_shards_is_a_collapse():
    a, b = _report(_test("a.py::t", 8)), _report(_test("b.py::t", 16))
    [forged] = b.tests[0].workloads
    forged = dataclasses.replace(forged, hash=a.tests[0].workloads[0].hash)
    b = _report(dataclasses.replace(b.tests[0], workloads=(forged,)))
    [(collapse, _, _)] = merge_reports([Shard("a.json", a), Shard("b.json", b)]).collapses
    assert collapse.kind == "hash collapse"


def test_another_scheme_is_refused():
    a, b = _report(_test("a.py::t", 8)), dataclasses.replace(_report(_test("b.py::t", 8)), scheme=2)
    with pytest.raises(WorkloadError, match=r"different fingerprint schemes \(a.json: scheme 1, b"):
        merge_reports([Shard("a.json", a), Shard("b.json", b)])


def test_a_test_in_two_shards_is_refused():
    a, b = _report(_test("t.py::t", 8)), _report(_test("t.py::t", 8))
    with pytest.raises(WorkloadError, match=r"test t.py::t is in a.json and b.json"):
        merge_reports([Shard("a.json", a), Shard("b.json", b)])


def test_shards_on_other_devices_keep_no_environment_and_say_so():
    other = {**ENV, "threads": 8}
    a, b = _report(_test("a.py::t", 8)), _report(_test("b.py::t", 8), environment=other)
    merged = merge_reports([Shard("a.json", a), Shard("b.json", b)]).report
    assert merged.environment is None
    assert "compare judges no timing" in merged.problems[-1]


def test_problems_keep_the_shard_they_came_from():
    a = _report(_test("a.py::t", 8), problems=("xdist worker gw1 sent no workload data",))
    merged = merge_reports([Shard("a.json", a)]).report
    assert merged.problems == ("a.json: xdist worker gw1 sent no workload data",)


def _write(tmp_path, name, report):
    path = tmp_path / name
    write_report(path, report)
    return str(path)


def test_cli_writes_the_merged_report_and_exits_1_on_a_collapse(tmp_path, capsys):
    a = _write(tmp_path, "a.json", _report(_test("a.py::t", 8, _class_key)))
    b = _write(tmp_path, "b.json", _report(_test("b.py::t", 16, _class_key)))
    out = tmp_path / "m.json"
    assert main(["merge", a, b, "--output", str(out)]) == 1
    text = capsys.readouterr().out
    assert 'user key collapse: two distinct workloads share the key "TinyNet"' in text
    assert f"(across shards {a} and {b})" in text
    assert [t.nodeid for t in read_report(out).tests] == ["a.py::t", "b.py::t"]


def test_cli_bad_input_is_exit_2_naming_the_file(tmp_path, capsys):
    a = _write(tmp_path, "a.json", _report(_test("a.py::t", 8)))
    broken = tmp_path / "b.json"
    broken.write_text("{")
    assert main(["merge", a, str(broken), "--output", str(tmp_path / "m.json")]) == 2
    assert str(broken) in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


SHARD_TESTS = {
    "test_a": "@pytest.mark.workloads\ndef test_a():\n    Net().eval()(torch.rand(1, 3, 8, 8))\n",
    "test_b": "@pytest.mark.workloads\ndef test_b():\n    Net().eval()(torch.rand(1, 3, 16, 16))\n",
}

#: Timings of two runs differ with the machine's load; this test is about hashes.
UNTIMED = ("--workload-timing=off",)


def test_sharded_runs_merge_into_what_one_run_reports(pytester, capsys):
    pytester.makeini(SUITE_INI)
    pytester.makepyfile(**{name: MODELS + body for name, body in SHARD_TESTS.items()})
    for name in SHARD_TESTS:
        result = pytester.runpytest(f"{name}.py", f"--workload-json={name}.json", *UNTIMED)
        result.assert_outcomes(passed=1)
    pytester.runpytest("--workload-json=whole.json", *UNTIMED).assert_outcomes(passed=2)
    a, b, merged = (pytester.path / f for f in ("test_a.json", "test_b.json", "merged.json"))
    assert main(["merge", str(a), str(b), "--output", str(merged)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "no collapse across shards"
    whole = read_report(pytester.path / "whole.json")
    hashes = {t.nodeid: [w.hash for w in t] for t in read_report(merged).tests}
    assert hashes == {t.nodeid: [w.hash for w in t] for t in whole.tests}
    assert main(["compare", str(pytester.path / "whole.json"), str(merged)]) == 0
    json.loads(merged.read_text())  # plain JSON, readable by any tool


def test_merge_shows_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "merge" in capsys.readouterr().out
