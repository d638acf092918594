"""The texts at the end of a run: notes once per text, and what was not checked."""

from __future__ import annotations

from pytest_workload._core.notes import Note
from pytest_workload._core.text import PLAIN, Commands
from pytest_workload._report.summary import render_note_counts, render_notes, render_unchecked

ALL = Commands(("--workload-record=all",))


def test_a_note_is_shown_once_after_the_first_test_that_showed_it():
    notes = [Note("t.py::a", "x"), Note("t.py::b", "x"), Note("t.py::b", "y"), Note("t.py::c", "x")]
    assert render_notes(notes) == ["t.py::a (and 2 more tests): x", "t.py::b: y"]
    assert render_notes([Note("t.py::a", "x"), Note("t.py::a", "x")]) == ["t.py::a: x"]


def test_the_unchecked_line_says_what_was_not_checked_or_not_written():
    def unchecked(kept, *, gate, update, recorded, commands=PLAIN):
        return render_unchecked(
            kept, gate=gate, update=update, recorded=recorded, commands=commands
        )

    assert unchecked(0, gate=False, update=False, recorded=3) is None
    assert unchecked(0, gate=True, update=True, recorded=3) is None
    assert unchecked(2, gate=False, update=False, recorded=3) == (
        "2 workload snapshots not checked: workload snapshots are checked only with "
        "--workload-snapshot"
    )
    assert unchecked(0, gate=False, update=True, recorded=1, commands=ALL) == (
        "--snapshot-update wrote no workload snapshot: they are written only with "
        "--workload-snapshot; run `pytest --workload-snapshot --snapshot-update "
        "--workload-record=all`"
    )
    assert unchecked(0, gate=True, update=True, recorded=0) == (
        "--snapshot-update wrote no workload snapshot: no test recorded workloads (tests "
        "marked @pytest.mark.workloads or using the workloads fixture record them, every "
        "test with --workload-record=all)"
    )
    assert unchecked(1, gate=True, update=False, recorded=2) == (
        "1 workload snapshot not checked (syrupy counts it as passed): its test failed"
    )


def test_performance_notes_are_one_counted_line_per_kind():
    notes = [
        Note(f"t.py::t{i}", f"timing baseline b{i}.json recorded: not written, ...", kind)
        for i, kind in enumerate(["baseline not written: xdist"] * 3 + ["baseline recorded"])
    ]
    notes.append(
        Note("t.py::t9", "timing baseline b1.json recorded: not written, ...", notes[1].kind)
    )
    notes.append(Note("t.py::t9", "model: not judged", "not judged: too few samples"))
    assert render_note_counts(notes, ALL, json=False) == [
        "1 timing baseline recorded",
        "3 timing baselines not written: timed while xdist workers shared this machine; write "
        "them with `pytest --workload-snapshot --snapshot-update --workload-record=all -p "
        "no:xdist` (or pass --workload-perf=strict)",
        "1 timing not judged: it or its baseline has fewer than the 6 samples a verdict needs",
        'each note, with its test and workload: --workload-json=PATH ("notes")',
    ]
    assert render_note_counts(notes[:1], PLAIN, json=True)[-1] == (
        'each note, with its test and workload: the JSON report ("notes")'
    )
    assert render_note_counts([], PLAIN, json=True) == []


def test_every_command_repeats_the_flags_that_chose_what_was_recorded():
    spaced = Commands(("--workload-record=all", "--workload-baselines=my baselines"))
    assert spaced.accept == (
        "`pytest --workload-snapshot --snapshot-update --workload-record=all "
        "'--workload-baselines=my baselines'`"
    )
    assert PLAIN.baseline == "`pytest --workload-snapshot --snapshot-update -p no:xdist`"
    assert PLAIN.accept_upgrade == (
        "`pytest --workload-snapshot --snapshot-update --workload-accept-upgrade`"
    )
    assert PLAIN.run == "`pytest --workload-snapshot -p no:xdist`"


def _counts(kind, n, **raised):
    notes = [Note(f"t.py::t{i}", f"text {i}", kind) for i in range(n)]
    return render_note_counts(notes, PLAIN, json=True, **raised)[0]


def test_each_counted_line_agrees_with_its_count():
    assert _counts("faster", 1) == (
        "1 workload faster than its baseline: refresh it with "
        "`pytest --workload-snapshot --snapshot-update -p no:xdist`"
    )
    assert _counts("faster", 2) == (
        "2 workloads faster than their baselines: refresh them with "
        "`pytest --workload-snapshot --snapshot-update -p no:xdist`"
    )
    assert _counts("no baseline", 1).startswith("1 workload without a timing baseline: record it")
    assert _counts("not judged: xdist", 2).startswith("2 regressions not failed: ")
    assert "judge them with" in _counts("not judged: xdist", 2)
    assert "judge it with" in _counts("not judged: xdist", 1)
    assert _counts("baseline not written: xdist", 1).endswith(
        "write it with `pytest --workload-snapshot --snapshot-update -p no:xdist` (or pass "
        "--workload-perf=strict)"
    )
    assert _counts("not judged: too few samples", 2) == (
        "2 timings not judged: they or their baselines have fewer than the 6 samples a verdict "
        "needs"
    )
    assert _counts("not judged: kernel", 2).endswith("from their baselines' to compare them")


def test_a_timing_cut_short_is_told_the_time_budget_that_records_it():
    assert _counts("no baseline: cut short", 2, larger=0.5) == (
        "2 workloads without a timing baseline, their timings cut short by the time budget: "
        "record them with a larger one: `pytest --workload-snapshot --snapshot-update "
        "--workload-time-budget=0.5 -p no:xdist`"
    )
    assert _counts("baseline not written: cut short", 1, larger=0.5) == (
        "1 timing baseline not written: the time budget cut its timing short; write it with a "
        "larger one: `pytest --workload-snapshot --snapshot-update --workload-time-budget=0.5 "
        "-p no:xdist`"
    )


def test_a_workload_line_counts_workloads_not_texts():
    # one workload whose two tests' notes differ (one test's baseline timed another
    # computation), and another workload
    notes = [
        Note(
            "t.py::a",
            "no timing baseline for Linear (timed another computation)",
            "no baseline",
            "h1",
        ),
        Note("t.py::b", "no timing baseline for Linear", "no baseline", "h1"),
        Note("t.py::c", "no timing baseline for Conv2d", "no baseline", "h2"),
    ]
    assert render_note_counts(notes, PLAIN, json=True)[0] == (
        "2 workloads without a timing baseline: record them with "
        "`pytest --workload-snapshot --snapshot-update -p no:xdist`"
    )
    assert render_note_counts(notes, PLAIN, json=True, quiet=True) == [
        "2 workload performance notes (shown without -q)"
    ]
    # a baseline file is one per test: its notes are counted by text
    written = [
        Note(n.nodeid, f"timing baseline of {n.nodeid} recorded", "baseline recorded", "h1")
        for n in notes[:2]
    ]
    assert render_note_counts(written, PLAIN, json=True)[0] == "2 timing baselines recorded"


def test_a_note_keeps_its_workload_in_the_json():
    note = Note("t.py::a", "x", "no baseline", "h1")
    assert Note.from_dict(note.to_dict()) == note
    assert Note.from_dict({"nodeid": "t.py::a", "kind": "snapshot", "text": "x"}).workload is None
