"""What users name reaches the terminal escaped: no class name, test id, user key, path or
report field can forge a line, clear the screen or set the window title (issue 22, item 4)."""

from __future__ import annotations

import json

import pytest
import torch

from pytest_workload import SessionReport, WorkloadRecorder
from pytest_workload.__main__ import main
from pytest_workload._core.text import one_line, terminal_text
from pytest_workload._report.session_report import write_report
from tests.pytester_suite import SUITE_INI, XDIST_MODES

#: Clears the screen (CSI), sets the window title (OSC ... BEL), then starts a line of its own.
HOSTILE = "Evil\x1b[2J\x1b]0;pwned\x07\rX\nFAKE LINE"
SHOWN = r"Evil\x1b[2J\x1b]0;pwned\x07\rX\nFAKE LINE"

MODULE = f"""
import pytest
import torch
from torch import nn

Evil = type({HOSTILE!r}, (nn.Linear,), {{}})
WIDTH = @WIDTH@


@pytest.mark.workloads
def test_evil():
    m = Evil(WIDTH, 2)
    m(torch.rand(1, WIDTH))


@pytest.mark.workloads
def test_key_collapse():
    m = nn.Linear(2, 2)
    m(torch.rand(1, 2))
    m(torch.rand(3, 2))
"""

#: A user key that forgets the input shape, and says so with control characters.
CONFTEST = f"""
def pytest_workload_key(module, args, kwargs):
    return {HOSTILE!r} if type(module).__name__ == "Linear" else None
"""


def _assert_escaped(text: str) -> None:
    assert not any(c in text for c in "\x1b\x07\r"), [c for c in text if not c.isprintable()]
    assert not any(line.startswith("FAKE LINE") for line in text.splitlines())


def test_one_line_and_terminal_text():
    assert one_line(HOSTILE) == SHOWN
    assert one_line("résumé × µs – ok") == "résumé × µs – ok"
    assert one_line("a\u202eb\u2028c\x9bd") == r"a\u202eb\u2028c\x9bd"
    assert terminal_text(f"first\n  {one_line(HOSTILE)}\x1b]2;t\x07") == (
        f"first\n  {SHOWN}\\x1b]2;t\\x07"
    )


@pytest.mark.parametrize("mode", ["no-xdist", "n2"])
def test_tree_failures_and_collapses_are_escaped(pytester, mode):
    pytester.makeini(SUITE_INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_evil=MODULE.replace("@WIDTH@", "2"))
    args = ("--workload-snapshot", "--workload-report=tree", *XDIST_MODES[mode])
    first = pytester.runpytest(*args, "--snapshot-update")
    first.assert_outcomes(passed=1, failed=1)
    snapshot = pytester.path / "__workload_snapshots__/test_evil/test_evil.workloads"
    stored = snapshot.read_bytes()
    assert json.dumps(HOSTILE).encode()[1:-1] in stored  # the file keeps the name as it is
    pytester.makepyfile(test_evil=MODULE.replace("@WIDTH@", "3"))
    second = pytester.runpytest(*args, "-rA")
    second.assert_outcomes(failed=2)
    assert snapshot.read_bytes() == stored
    for result in (first, second):
        out = result.stdout.str()
        _assert_escaped(out)
        assert f"Class:       {SHOWN} (test_evil.{SHOWN})" in out
        assert f"two distinct workloads share the key {json.dumps(HOSTILE)}" in out
    assert f"changed:  m (test_evil.{SHOWN})" in second.stdout.str()
    assert f"      {SHOWN} attribute in_features 2 -> 3 (1 module: m)" in second.stdout.str()


def _report(nodeid: str, problems: tuple[str, ...]) -> SessionReport:
    recorder = WorkloadRecorder(nodeid, timing=False)
    with recorder.recording(all_roots=True):
        torch.nn.Linear(2, 2)(torch.rand(1, 2))
    return SessionReport(scheme=1, tests=(recorder.workloads(),), problems=problems)


def test_compare_and_merge_escape_report_fields(tmp_path, capsys):
    base, head = tmp_path / "base.json", tmp_path / f"head{HOSTILE}.json"
    write_report(base, _report("t.py::a", ()))
    write_report(head, _report(f"t.py::{HOSTILE}", (HOSTILE,)))
    assert main(["compare", str(base), str(head)]) == 1
    assert main(["merge", str(base), str(head), "--output", str(tmp_path / "m.json")]) == 0
    assert main(["compare", str(base), str(tmp_path / f"missing{HOSTILE}.json")]) == 2
    out, err = capsys.readouterr()
    _assert_escaped(out + err)
    assert f"t.py::{SHOWN}" in out
    assert f"head{SHOWN}.json: {SHOWN}" in out
    assert f"missing{SHOWN}.json" in err
