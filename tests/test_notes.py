"""The texts at the end of a run: notes once per text, and what was not checked."""

from __future__ import annotations

from pytest_workload._model.notes import Note
from pytest_workload._render.report import render_notes, render_unchecked


def test_a_note_is_shown_once_after_the_first_test_that_showed_it():
    notes = [Note("t.py::a", "x"), Note("t.py::b", "x"), Note("t.py::b", "y"), Note("t.py::c", "x")]
    assert render_notes(notes) == ["t.py::a (and 2 more tests): x", "t.py::b: y"]
    assert render_notes([Note("t.py::a", "x"), Note("t.py::a", "x")]) == ["t.py::a: x"]


def test_the_unchecked_line_says_what_was_not_checked_or_not_written():
    assert render_unchecked(0, gate=False, update=False, recorded=3) is None
    assert render_unchecked(0, gate=True, update=True, recorded=3) is None
    assert render_unchecked(2, gate=False, update=False, recorded=3) == (
        "2 workload snapshots not checked: workload snapshots are checked only with "
        "--workload-snapshot"
    )
    assert render_unchecked(0, gate=False, update=True, recorded=1) == (
        "--snapshot-update without --workload-snapshot: workload snapshots are written only "
        "with --workload-snapshot (`pytest --workload-snapshot --snapshot-update`)"
    )
    assert render_unchecked(1, gate=True, update=False, recorded=2) == (
        "1 workload snapshot not checked: its test failed"
    )
