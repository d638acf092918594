"""The line a run prints while it times a test's workloads, with an injected clock."""

from __future__ import annotations

from pytest_workload._render.progress import TimingProgress


def _run(live, times):
    """Progress over ``len(times) - 1`` workloads, the clock reading ``times`` in turn."""
    shown = []
    clock = iter(times)
    progress = TimingProgress(
        lambda line, done: shown.append((line, done)), live=live, clock=lambda: next(clock)
    )
    total = len(times) - 1
    for done in range(total + 1):
        progress("t.py::test_big", done, total)
    return shown


def test_quick_timing_says_nothing():
    assert _run(live=True, times=[0.0, 0.5, 1.0, 1.9]) == []
    assert _run(live=False, times=[0.0, 0.5, 1.0, 1.9]) == []


def test_plain_output_gets_one_line_per_long_test():
    shown = _run(live=False, times=[0.0, 1.0, 2.5, 60.0, 61.0])
    assert shown == [
        (
            "pytest-workload: timing the workloads of t.py::test_big after its body: 2 of 4 "
            "done, 2 s so far",
            False,
        )
    ]


def test_a_terminal_line_is_rewritten_then_erased():
    shown = _run(live=True, times=[0.0, 1.0, 2.5, 60.0, 61.0])
    assert [line.split(": ", 2)[-1] for line, _ in shown[:-1]] == [
        "2 of 4 done, 2 s so far",
        "3 of 4 done, 60 s so far",
    ]
    assert shown[-1] == ("", True)
