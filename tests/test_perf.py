"""End-to-end runs of timing, FLOPs and the drift gate, with injected slowdowns."""

from __future__ import annotations

import fnmatch
import json

import pytest

from tests.pytester_suite import lit

SLEEPY = """
import time
import pytest
import torch
from torch import nn

SLEEP = {sleep}
REPEAT = {repeat}


class Sleepy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        end = time.thread_time() + SLEEP  # an injected slowdown: busy, so on the CPU clock
        while time.thread_time() < end:
            pass
        for _ in range(REPEAT):
            x = self.lin(x)
        return x


@pytest.mark.workloads{marker}
def test_sleepy():
    model = Sleepy()
    model(torch.rand({batch}, 4))
"""

GATE = ("--workload-snapshot",)


@pytest.fixture
def sleepy(pytester):
    pytester.makeini("[pytest]\nworkload_time_budget = 0.01\n")

    def write(sleep=0.0, repeat=1, marker="", batch=1):
        source = SLEEPY.format(sleep=sleep, repeat=repeat, marker=marker, batch=batch)
        pytester.makepyfile(test_sleepy=source)

    return write


def noted(pytester, *args):
    """A run, and the text of each note its JSON report holds, by kind (the terminal counts)."""
    result = pytester.runpytest(*args, "--workload-json=notes.json")
    texts = {}
    for note in json.loads((pytester.path / "notes.json").read_text())["notes"]:
        texts.setdefault(note["kind"], []).append(f"{note['nodeid']}: {note['text']}")
    return result, texts


def baseline(pytester, *args):
    """Write baselines."""
    result = pytester.runpytest(*GATE, "--snapshot-update", *args)
    result.assert_outcomes(passed=1)


def test_an_injected_3x_slowdown_fails_with_the_numbers(pytester, sleepy, injected):
    sleepy()
    injected(0.01)
    baseline(pytester)
    injected(0.03)
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "performance regression: model (test_sleepy.Sleepy), input (float32[1, 4]), hash *",
            "  slower: calibrated ratio 3.00x (95% interval 3.00–3.00x), tolerance 15%: compute "
            "relative to the calibration kernel timed beside it, waits in seconds; re-timed 4 "
            "times, judged on every timing's samples",
            "  wall time, context only: median 30.00 ms vs baseline 10.00 ms (3.00x), the "
            "calibration kernel 1.00x its baseline's time",
            "  current *, baseline *",
            "  on cpu *, torch *, 1 thread; accept the new timing with "
            "`pytest --workload-snapshot --snapshot-update -p no:xdist`",
        )
    )


def test_the_summary_counts_the_regression(pytester, sleepy, injected):
    sleepy()
    injected(0.01)
    baseline(pytester)
    injected(0.03)
    result = pytester.runpytest(*GATE, "--workload-report=summary")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["workload gate: 1 test failed it, with 1 performance regression"])


def test_unchanged_reruns_pass(pytester, sleepy, injected):
    sleepy()
    baseline(pytester)
    for _ in range(3):
        pytester.runpytest(*GATE).assert_outcomes(passed=1)


def test_a_machine_slower_for_workload_and_kernel_alike_passes(pytester, sleepy, injected):
    sleepy()
    baseline(pytester)
    injected(0.02, kernel=0.002)  # 2x slower for both, as in a slow phase of the machine
    result, notes = noted(pytester, *GATE)
    result.assert_outcomes(passed=1)
    assert notes == {}
    injected(0.02, kernel=0.001)  # the kernel at its baseline's speed: the workload is slower
    pytester.runpytest(*GATE).assert_outcomes(failed=1)


def test_a_wait_is_not_divided_by_the_machine_speed(pytester, sleepy, injected):
    sleepy()
    injected(0.005, wait=0.005)  # 5 ms of compute, 5 ms asleep
    baseline(pytester)
    # the machine 1.4x faster: the compute with it, not the sleep. On the whole time over the
    # kernel's this read 1.21x, a false alarm
    injected(0.005 / 1.4, kernel=0.001 / 1.4, wait=0.005)
    result, notes = noted(pytester, *GATE)
    result.assert_outcomes(passed=1)
    assert notes == {}
    injected(0.005 / 1.4, kernel=0.001 / 1.4, wait=0.015)  # a sleep 3x as long
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  slower: calibrated ratio 2.00x (95% interval 2.00–2.00x)*"])


def test_a_kernel_far_from_its_baseline_is_a_note_not_a_verdict(pytester, sleepy, injected):
    sleepy()
    baseline(pytester)
    # the kernel counted 100x less than at the baseline (whose thread spun for its intra-op
    # siblings): 30x "slower" calibrated, while the wall time says 0.3x
    injected(0.003, kernel=0.00001)
    result, notes = noted(pytester, *GATE)
    result.assert_outcomes(passed=1)
    (note,) = notes["not judged: kernel"]
    assert fnmatch.fnmatch(
        note,
        lit(
            "test_sleepy.py::test_sleepy: model (test_sleepy.Sleepy), input (float32[1, 4]), "
            "hash *: calibrated ratio 30.00x (95% interval *x) (wall time, context only, 0.30x), "
            "not judged: the calibration kernel took 0.01x its baseline's time, beyond any load "
            "or phase of one machine; refresh the baseline with "
            "`pytest --workload-snapshot --snapshot-update -p no:xdist`",
        )[0],
    )
    result.stdout.fnmatch_lines(["1 timing not judged: the calibration kernel's time moved *"])


#: The injected stopwatch takes no time: a budget of 1 ns cuts every timing short, after its
#: first sample.
CUT_SHORT = "--workload-time-budget=1e-9"


def test_a_timing_the_budget_cut_short_is_counted_not_judged(pytester, sleepy, injected):
    sleepy()
    baseline(pytester)
    injected(1.0)  # a forward of 1 s
    result, notes = noted(pytester, *GATE, CUT_SHORT)
    result.assert_outcomes(passed=1)
    (note,) = notes["not judged: too few samples"]
    assert fnmatch.fnmatch(
        note,
        lit(
            "test_sleepy.py::test_sleepy: model (test_sleepy.Sleepy), input (float32[1, 4]), "
            "hash *: calibrated ratio 100.00x, not judged: timed on 1 sample (the time budget cut "
            "it short: see --workload-time-budget) against the baseline's *, and a verdict "
            "needs 6 on each side",
        )[0],
    )
    result.stdout.fnmatch_lines(
        ["1 timing not judged: it or its baseline has fewer than the 6 samples a verdict needs"]
    )


def test_strict_fails_a_timing_it_cannot_judge(pytester, sleepy, injected):
    sleepy()
    baseline(pytester)
    strict = (*GATE, "--workload-perf=strict")
    result = pytester.runpytest(*strict, CUT_SHORT)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*not judged: timed on 1 sample*; --workload-perf=strict fails a timing it cannot judge"]
    )
    injected(0.003, kernel=0.00001)
    result = pytester.runpytest(*strict)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*the calibration kernel took 0.01x*; --workload-perf=strict fails a timing it cannot*"]
    )
    pytester.runpytest(*GATE, CUT_SHORT).assert_outcomes(passed=1)  # not strict: a note


def test_missing_baseline_is_a_note_not_a_failure(pytester, sleepy):
    sleepy()
    pytester.runpytest("--workload-snapshot", "--snapshot-update", "--workload-perf=off")
    quiet = pytester.runpytest(*GATE, "-q")
    quiet.assert_outcomes(passed=1)
    quiet.stdout.fnmatch_lines(["1 workload performance note (shown without -q)"])
    quiet.stdout.no_fnmatch_line("*no timing baseline*")
    result, notes = noted(pytester, *GATE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*- workload performance -*",
            "1 workload without a timing baseline: record it with "
            "`pytest --workload-snapshot --snapshot-update -p no:xdist`",
        ]
    )
    (note,) = notes["no baseline"]
    assert fnmatch.fnmatch(
        note,
        lit(
            "test_sleepy.py::test_sleepy: no timing baseline for test_sleepy.Sleepy, "
            "input (float32[1, 4]), hash * on cpu *; record one with "
            "`pytest --workload-snapshot --snapshot-update -p no:xdist`",
        )[0],
    )


@pytest.mark.parametrize(
    "how",
    [
        pytest.param(("--workload-perf-tolerance=5",), id="option"),
        pytest.param(("-o", "workload_perf_tolerance=5"), id="ini"),
        pytest.param((), id="marker"),
    ],
)
def test_tolerance_from_option_ini_and_marker(pytester, sleepy, injected, how):
    marker = "(perf_tolerance=5)" if not how else ""
    sleepy(marker=marker)
    baseline(pytester)
    injected(0.03)
    pytester.runpytest(*GATE, *how).assert_outcomes(passed=1)


def test_marker_tolerance_beats_the_option(pytester, sleepy, injected):
    sleepy(marker="(perf_tolerance=0.2)")
    baseline(pytester)
    injected(0.03)
    pytester.runpytest(*GATE, "--workload-perf-tolerance=5").assert_outcomes(failed=1)


def test_much_faster_is_reported_not_failed(pytester, sleepy, injected):
    sleepy()
    injected(0.03)
    baseline(pytester)
    injected(0.01)
    result, notes = noted(pytester, *GATE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["1 workload faster than its baseline: refresh it with `*`"])
    (note,) = notes["faster"]
    assert fnmatch.fnmatch(
        note,
        lit(
            "*: model (test_sleepy.Sleepy), input * is faster than its baseline: calibrated "
            "ratio 0.33x (95% interval *x), tolerance 15%: * (wall time, context only: median "
            "10.00 ms vs baseline 30.00 ms (0.33x), *); refresh the baseline with `*`"
        )[0],
    )


def test_perf_checks_turn_off_alone(pytester, sleepy, injected):
    sleepy()
    baseline(pytester)
    injected(0.03)
    pytester.runpytest("--workload-snapshot", "--workload-perf=off").assert_outcomes(passed=1)
    sleepy(batch=2)  # a hash change still fails
    pytester.runpytest("--workload-snapshot", "--workload-perf=off").assert_outcomes(failed=1)


def test_update_refreshes_a_drifted_baseline(pytester, sleepy, injected):
    sleepy()
    baseline(pytester)
    injected(0.03)
    updated, notes = noted(pytester, *GATE, "--snapshot-update")
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(["1 timing baseline refreshed"])
    (note,) = notes["baseline refreshed"]
    assert fnmatch.fnmatch(
        note,
        lit(
            "*: timing baseline for model (test_sleepy.Sleepy) * refreshed: calibrated ratio "
            "*x (95% interval *x) against the old one"
        )[0],
    )
    pytester.runpytest(*GATE).assert_outcomes(passed=1)


def test_an_update_refreshes_a_baseline_within_tolerance_too(pytester, sleepy, injected):
    """Accepting is a fixed point: the issue's update kept a baseline that had not drifted
    beyond doubt, and the next run on the same machine failed against the old one."""
    sleepy()
    injected(0.010)
    baseline(pytester)
    injected(0.011)  # within the tolerance of the old baseline: no drift
    updated = pytester.runpytest(*GATE, "--snapshot-update")
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(["1 timing baseline refreshed"])
    injected(0.0125)  # 1.25x the old baseline, 1.14x the one this update measured
    pytester.runpytest(*GATE).assert_outcomes(passed=1)


def test_nearest_compatible_baseline_is_a_note(pytester, sleepy):
    sleepy(batch=1)
    baseline(pytester)
    sleepy(batch=4)
    pytester.runpytest("--workload-snapshot", "--snapshot-update", "--workload-perf=off")
    result, notes = noted(pytester, *GATE)
    result.assert_outcomes(passed=1)
    (note,) = notes["no baseline"]
    assert fnmatch.fnmatch(
        note,
        lit(
            "*: no timing baseline for test_sleepy.Sleepy, input (float32[4, 4])*; nearest "
            "compatible baseline: model (float32[1, 4]) (*) at distance factor 4, so about * "
            "expected if time scales with size; record one with `*`"
        )[0],
    )


def test_flop_change_without_a_hash_change_fails(pytester, sleepy, injected):
    # (the same hash: its timing is judged against the baseline too, by the injected stopwatch)
    sleepy(sleep=0, repeat=1)
    pytester.runpytest("--workload-snapshot", "--snapshot-update").assert_outcomes(passed=1)
    sleepy(sleep=0, repeat=2)  # forward now runs the layer twice: same structure, same inputs
    result = pytester.runpytest("--workload-snapshot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit("  changed:  model (test_sleepy.Sleepy) * -> *", "      FLOPs 32 -> 64")
    )


def test_json_has_timing_flops_and_environment(pytester, sleepy):
    sleepy(sleep=0.001)
    pytester.runpytest("--workload-json=r.json").assert_outcomes(passed=1)
    report = json.loads((pytester.path / "r.json").read_text())
    env = report["environment"]
    assert env["device"]["kind"] == "cpu" and env["device"]["name"]
    assert env["torch"] and env["threads"] >= 1
    (workload,) = report["tests"][0]["workloads"]
    timing = workload["timing"]
    assert {"median_s", "iqr_s", "n", "device", "ci95_s"} <= set(timing)
    assert timing["ci95_s"][0] <= timing["median_s"] <= timing["ci95_s"][1]
    assert timing["n"] >= 5 and timing["device"] == "cpu"
    assert workload["flops"] == 32
    assert workload["output_signature"] == {"tensor": [1, 4], "dtype": "float32"}


def test_timing_off_keeps_flops(pytester, sleepy):
    sleepy(sleep=0)
    pytester.runpytest("--workload-timing=off", "--workload-json=r.json").assert_outcomes(passed=1)
    (workload,) = json.loads((pytester.path / "r.json").read_text())["tests"][0]["workloads"]
    assert workload["timing"] is None and workload["flops"] == 32


def test_terminal_report_shows_median_and_spread(pytester, sleepy):
    sleepy(sleep=0.001)
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        lit(
            # a 95% CI too where n allows one (unit-tested: test_drift.py)
            "        Timing:      median *, IQR * (n=*, replayed on 1 thread, cpu)",
            "        FLOPs:       32 FLOP",
        )
    )


def test_missing_device_is_a_usage_error(pytester, sleepy):
    sleepy()
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = pytester.runpytest("--workload-device=cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: workload device 'cuda' asked for, but CUDA is not available"]
    )
    bad = pytester.runpytest("--workload-device=tpu")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*unknown workload device 'tpu'*"])


def test_workload_device_fixture(pytester):
    pytester.makepyfile(
        """
import torch

def test_device(workload_device):
    assert isinstance(workload_device, torch.device)
    assert workload_device.type == "cpu"
"""
    )
    pytester.runpytest("--workload-device=cpu").assert_outcomes(passed=1)


def test_corrupt_baseline_is_an_error_naming_it(pytester, sleepy):
    sleepy()
    baseline(pytester)
    (path,) = (pytester.path / "__workload_baselines__").rglob("*.json")
    path.write_text("{broken")
    result = pytester.runpytest(*GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit("corrupt timing baseline *.json: is not valid JSON*"))
    assert path.read_text() == "{broken"


def test_a_corrupt_baseline_of_another_workload_is_a_note_naming_it(pytester, sleepy):
    sleepy()
    baseline(pytester)
    (path,) = (pytester.path / "__workload_baselines__").rglob("*.json")
    other = path.with_name("0" * 64 + ".json")
    other.write_text("{broken")
    sleepy(batch=2)  # no baseline of its own: the store is searched for a compatible one
    update = ("--workload-snapshot", "--snapshot-update", "--workload-perf=off")
    pytester.runpytest(*update).assert_outcomes(passed=1)  # the snapshot only
    result, notes = noted(pytester, *GATE)
    result.assert_outcomes(passed=1)  # one corrupt file fails no other workload's test
    result.stdout.fnmatch_lines(["1 timing baseline unreadable: left out of nearest-shape lookups"])
    (note,) = notes["unreadable baseline"]
    assert fnmatch.fnmatch(
        note,
        f"*timing baseline *{other.name}: is not valid JSON*; left out of nearest-shape lookups",
    )
    assert other.read_text() == "{broken"


OBSERVED = """
import time
import pytest
import torch
from torch import nn

SEEN = torch.zeros(1)


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        time.sleep({sleep})
        SEEN.add_(1)  # a write outside the module: timed from the test's own calls
        return self.lin(x)


@pytest.mark.workloads
def test_counting():
    model = Counting()
    for _ in range({calls}):
        model(torch.rand(1, 4))
"""


def _baseline_file(pytester):
    (path,) = (pytester.path / "__workload_baselines__").rglob("*.json")
    return path


def test_a_timing_of_too_few_samples_becomes_no_baseline(pytester):
    # the first two calls are traced, so 3 calls leave 1 observed sample
    pytester.makepyfile(test_counting=OBSERVED.format(sleep=0.001, calls=3))
    result = pytester.runpytest(*GATE, "--snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["1 timing baseline not written: timed on fewer than the 6 samples a verdict needs"]
    )
    assert not (pytester.path / "__workload_baselines__").exists()


def test_a_10x_slowdown_on_one_sample_against_one_passes(pytester):
    """The issue's gate failed an unchanged test on one sample against one sample."""
    pytester.makepyfile(test_counting=OBSERVED.format(sleep=0.001, calls=9))
    update = (*GATE, "--snapshot-update")
    pytester.runpytest(*update).assert_outcomes(passed=1)
    stored = json.loads(_baseline_file(pytester).read_text())
    assert stored["timing"]["n"] == 7
    median = stored["timing"]["median_s"]  # one sample, as a timing of one call would say
    stored["timing"].update(n=1, iqr_s=0.0, ci95_s=[median, median])
    _baseline_file(pytester).write_text(json.dumps(stored))
    pytester.makepyfile(test_counting=OBSERVED.format(sleep=0.01 + 10 * median, calls=3))
    result = pytester.runpytest(*GATE, "--workload-json=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "1 timing not judged: it or its baseline has fewer than the 6 samples a verdict needs",
            'each note, with its test and workload: the JSON report ("notes")',
        ]
    )
    notes = json.loads((pytester.path / "r.json").read_text())["notes"]
    (note,) = [n for n in notes if n["kind"] == "not judged: too few samples"]
    assert note["nodeid"] == "test_counting.py::test_counting"
    assert "not judged: timed on 1 sample against the baseline's 1" in note["text"]
