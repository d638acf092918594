"""The drift gate's evidence, with injected clocks: no test here depends on the machine's
load or core count."""

import dataclasses
import json

import pytest
import torch

from pytest_workload import TestWorkloads, WorkloadRecorder
from pytest_workload._core.errors import WorkloadDataError
from pytest_workload._perf.baseline import Baseline, judge, worth_retiming
from pytest_workload._perf.device import CpuDevice, DeviceIdentity
from pytest_workload._perf.perf_gate import PerfGate
from pytest_workload._perf.stopwatch import Lap, TimingPolicy, measure, summarize, time_call
from pytest_workload._report.summary import format_timing
from pytest_workload._workload.timing import Timing
from tests.models import TinyNet


def timed(ratio, wall=None, n=50, spread=0.02, retimed=0, kernel=1e-3, wait=0.0):
    """A replayed timing whose compute's ratio to the calibration kernel is ``ratio`` (+-2%),
    and which waited ``wait`` seconds a call (+-2%); its wall time is ``wall`` seconds per call
    (default: its compute and its waits)."""
    wall = ratio * kernel + wait if wall is None else wall
    return Timing(
        wall,
        0.0,
        n,
        (wall * (1 - spread), wall * (1 + spread)),
        "cpu",
        ratio=ratio,
        ratio_ci=(ratio * (1 - spread), ratio * (1 + spread)),
        wait_s=wait,
        wait_ci=(wait * (1 - spread), wait * (1 + spread)),
        calibration_s=kernel,
        retimed=retimed,
    )


BASE = timed(1.0)


def reference():
    """The calibration kernel, as the fake stopwatches below tell it from the workload."""


# -- interleaving ------------------------------------------------------------------------------


class PairStopwatch:
    """A workload call takes ``workload_s`` and a kernel call ``kernel_s`` on the ratio clock
    (wall time ``wall`` times that); it logs the order of the blocks."""

    def __init__(self, workload_s, kernel_s, wall=1.0):
        self.workload_s, self.kernel_s, self.wall = workload_s, kernel_s, wall
        self.blocks = []

    def __call__(self, fn, number):
        per_call = self.kernel_s if fn is reference else self.workload_s
        self.blocks.append(("C" if fn is reference else "W", number))
        return Lap(per_call * number * self.wall, per_call * number)


class WaitingStopwatch:
    """A workload call computes for ``compute`` kernel calls and waits ``wait_s``; the machine
    runs the kernel in ``kernel_s``."""

    def __init__(self, compute, wait_s, kernel_s):
        self.compute, self.wait_s, self.kernel_s = compute, wait_s, kernel_s

    def __call__(self, fn, number):
        if fn is reference:
            return Lap(self.kernel_s * number, self.kernel_s * number)
        compute, wait = self.compute * self.kernel_s * number, self.wait_s * number
        return Lap(compute + wait, compute, wait)


def test_blocks_alternate_sized_on_the_ratio_clock():
    stopwatch = PairStopwatch(workload_s=1e-5, kernel_s=4e-4, wall=3.0)
    policy = TimingPolicy(budget_s=0, min_samples=6, max_samples=6)
    samples = measure(lambda: None, stopwatch, policy, reference=reference)
    timed_blocks = stopwatch.blocks[4:]  # after two warm-up calls of each
    assert timed_blocks == [("W", 100), ("C", 3)] * 6  # 1 ms of each, whatever the wall clock
    assert samples.ratios == [pytest.approx(1e-5 / 4e-4)] * 6
    assert samples.waits_s == [0.0] * 6
    assert samples.wall_s == [pytest.approx(3e-5)] * 6  # the wall time, what a user reads
    assert samples.calibration_s == [pytest.approx(4e-4)] * 6


def test_a_machine_slowed_down_for_both_divides_out():
    quiet = time_call(
        lambda: None, PairStopwatch(1e-3, 4e-4), TimingPolicy(budget_s=0), "cpu", reference
    )
    slow = time_call(
        lambda: None, PairStopwatch(2e-3, 8e-4), TimingPolicy(budget_s=0), "cpu", reference
    )
    drift = judge(slow, quiet)
    assert drift.kind == "unchanged" and drift.ratio == pytest.approx(1.0)
    assert drift.wall_ratio == pytest.approx(2.0) and drift.machine_ratio == pytest.approx(2.0)
    slower = time_call(
        lambda: None, PairStopwatch(3e-3, 8e-4), TimingPolicy(budget_s=0), "cpu", reference
    )
    assert judge(slower, quiet).kind == "regression"


class SequenceStopwatch:
    """The workload's i-th timed block takes ``durations[i]`` ms per call; the kernel 1 ms."""

    def __init__(self, durations):
        self.durations, self.calls = iter(durations), 0

    def __call__(self, fn, number):
        if fn is reference:
            return Lap(1e-3 * number, 1e-3 * number)
        self.calls += 1
        per_call = 1e-3 * (1 if self.calls <= 2 else next(self.durations))  # 2 to warm up
        return Lap(per_call * number, per_call * number)


def test_the_ratio_is_the_median_of_the_pairs_with_an_order_statistic_interval():
    ratios = [1.0, 1.1, 0.9, 5.0, 1.05, 0.95, 1.0, 1.02, 0.98, 1.01, 0.99, 50.0]
    stopwatch = SequenceStopwatch(ratios)
    policy = TimingPolicy(budget_s=0, min_samples=12, max_samples=12)
    t = summarize(**_summary_args(measure(lambda: None, stopwatch, policy, reference=reference)))
    assert t.ratio == pytest.approx(1.005)  # two stalls of 5x and 50x move nothing
    assert t.ratio_ci == (0.95, 5.0)  # the 2nd and 11th of the 12 in order
    assert t.calibration_s == pytest.approx(1e-3)


def _summary_args(samples):
    return dict(
        samples_s=samples.wall_s,
        device="cpu",
        ratios=samples.ratios,
        waits_s=samples.waits_s,
        calibration_s=samples.calibration_s,
    )


def test_a_wait_is_not_divided_by_the_machine_speed():
    # half compute, half a 1 ms sleep; the machine then runs 1.4x faster: the compute with it,
    # the sleep not. On its whole time over the kernel's it read (0.7 + 1) / 0.7 = 2.43 kernel
    # calls against 2, a 1.21x "regression"; judged apart, it is unchanged.
    def timing(compute, wait_s, kernel_s):
        stopwatch = WaitingStopwatch(compute, wait_s, kernel_s)
        return time_call(lambda: None, stopwatch, TimingPolicy(budget_s=0), "cpu", reference)

    base = timing(1.0, 1e-3, 1e-3)
    assert base.ratio == pytest.approx(1.0) and base.wait_s == pytest.approx(1e-3)
    drift = judge(timing(1.0, 1e-3, 0.7e-3), base)
    assert drift.kind == "unchanged" and drift.ratio == pytest.approx(1.0)
    assert drift.wall_ratio == pytest.approx(1.7 / 2)
    # a sleep 3x as long: (1 + 5) ms against 2 ms at the baseline's speed, whatever the machine
    for kernel_s in (0.7e-3, 1e-3, 1.4e-3):
        slower = judge(timing(1.0, 5e-3, kernel_s), base)
        assert slower.kind == "regression" and slower.ratio == pytest.approx(3.0)
    # as much extra compute, on a slower machine
    assert judge(timing(5.0, 1e-3, 1.4e-3), base).ratio == pytest.approx(3.0)


def test_the_calibrated_time_adds_the_parts_and_their_interval_ends():
    t = timed(2.0, kernel=1e-3, wait=1e-3)
    low, high = 2.0 * 0.98 * 5e-4 + 0.98e-3, 2.0 * 1.02 * 5e-4 + 1.02e-3
    assert t.calibrated(5e-4) == pytest.approx((2e-3, low, high))
    recorded = Timing(2.0, 0.0, 50, (1.98, 2.02), "cpu", source="recorded calls")
    assert recorded.calibrated(1e-3) is None


# -- re-timing ---------------------------------------------------------------------------------


class RoundStopwatch:
    """Every workload call of round ``r`` takes ``durations[r]`` seconds (the kernel 1 s);
    a round is one timing."""

    def __init__(self, durations):
        self.durations, self.round = durations, 0

    def __call__(self, fn, number):
        per_call = (
            1.0 if fn is reference else self.durations[min(self.round, len(self.durations) - 1)]
        )
        return Lap(per_call * number, per_call * number)


def policy_for(stopwatch, suspect_above):
    def suspect(workload, t):
        assert workload == "h"
        stopwatch.round += 1
        return t.ratio > suspect_above

    return TimingPolicy(budget_s=0, max_samples=8, suspect=suspect, workload="h")


def retimed_call(stopwatch, policy):
    return time_call(lambda: None, stopwatch, policy, "cpu", reference)


def test_a_stall_in_one_timing_is_outvoted_by_its_re_timings():
    stopwatch = RoundStopwatch([5.0, 1.0, 1.0])  # a 5x stall, then the workload's own time
    t = retimed_call(stopwatch, policy_for(stopwatch, 2.0))
    assert t.ratio == 1.0 and t.retimed == 2 and t.n == 18  # 6 pairs a round, all kept


def test_a_regression_slower_each_time_is_judged_on_every_round():
    stopwatch = RoundStopwatch([4.0, 3.0, 3.5])  # then 3.5 in every further round
    t = retimed_call(stopwatch, policy_for(stopwatch, 2.0))
    assert t.ratio == 3.5 and t.retimed == TimingPolicy().retimes == 4


def test_re_timing_stops_once_the_samples_clear_it():
    stopwatch = RoundStopwatch([3.0, 1.0, 1.0])
    t = retimed_call(stopwatch, policy_for(stopwatch, 2.5))
    assert t.retimed == 1 and t.ratio == 2.0 and stopwatch.round == 2


def test_nothing_is_re_timed_without_a_suspect():
    stopwatch = RoundStopwatch([4.0, 1.0])
    assert retimed_call(stopwatch, TimingPolicy(budget_s=0)).retimed == 0
    bound = TimingPolicy(budget_s=0, suspect=lambda *_: True)  # not bound to a workload
    assert retimed_call(stopwatch, bound).retimed == 0


def test_the_cpu_stopwatch_reads_wall_and_thread_time():
    from pytest_workload._perf.stopwatch import cpu_lap

    clock, thread = iter([0, 1000]), iter([0, 500])
    lap = cpu_lap(lambda: None, 1, lambda: next(clock), lambda: next(thread), lambda: None)
    assert lap == Lap(1e-6, 5e-7)


# -- the verdict -------------------------------------------------------------------------------


def test_the_calibrated_ratio_decides_whatever_the_wall_time():
    # the machine ran 3x slower for both: the wall time is 3x, the workload unchanged
    assert judge(timed(1.05, wall=3e-3, kernel=3e-3), BASE).kind == "unchanged"
    drift = judge(timed(1.4, wall=1e-3, kernel=0.7e-3), BASE)  # a faster phase hid it
    assert drift.kind == "regression" and drift.evidence == "calibrated"
    assert drift.ratio == pytest.approx(1.4) and drift.wall_ratio == pytest.approx(1.0)
    assert drift.machine_ratio == pytest.approx(0.7)


def test_a_kernel_far_from_its_baseline_makes_the_timings_not_comparable():
    # the baseline's kernel counted 100x its time (its thread spun for its intra-op siblings):
    # 30x "slower" calibrated while the wall time says 0.37x
    drift = judge(timed(30.0, wall=0.37e-3, kernel=1e-5), BASE)
    assert drift.kind == "not comparable" and drift.machine_ratio == pytest.approx(0.01)
    assert not worth_retiming(drift)
    assert judge(timed(0.05, wall=3e-3, kernel=0.1), BASE).kind == "not comparable"
    # within the CPU's kernel limit either way, the calibrated ratio decides
    assert judge(timed(1.4, kernel=1.01e-3 / CpuDevice.kernel_limit), BASE).kind == "regression"
    assert judge(timed(1.4, kernel=0.99e-3 * CpuDevice.kernel_limit), BASE).kind == "regression"
    # FLOPs still decide
    # a device's ratio clock is its own events: a shared device slows kernel and workload alike
    on_gpu = [dataclasses.replace(t, device="cuda:0") for t in (timed(30.0, kernel=1e-5), BASE)]
    assert judge(*on_gpu).kind == "regression"


def test_a_regression_needs_the_whole_combined_interval_beyond_the_tolerance():
    # median 1.3x, but the current low end 1.3 * 0.9 against the baseline's high end 1.02
    assert judge(timed(1.3, spread=0.1), BASE).kind == "unchanged"
    assert worth_retiming(judge(timed(1.3, spread=0.1), BASE))
    assert judge(timed(1.3, spread=0.05), BASE).kind == "regression"
    assert judge(timed(0.7, spread=0.02), BASE).kind == "faster"


def test_a_timing_beyond_the_tolerance_either_way_is_timed_again():
    # a sleep the kernel booked as waiting for a core reads faster: doubted like a slowdown
    assert worth_retiming(judge(timed(0.7, spread=0.02), BASE))
    assert worth_retiming(judge(timed(0.8, spread=0.2), BASE))  # faster, not proven
    assert not worth_retiming(judge(timed(0.9), BASE))  # within the tolerance


def test_within_tolerance_is_unchanged():
    assert judge(timed(1.1), BASE).kind == "unchanged"
    assert not worth_retiming(judge(timed(1.1), BASE))


def test_without_calibration_wall_time_decides():
    recorded = Timing(2.0, 0.0, 50, (1.98, 2.02), "cpu", source="recorded calls")
    old = Timing(1.0, 0.0, 50, (0.98, 1.02), "cpu", source="recorded calls")
    drift = judge(recorded, old)
    assert drift.kind == "regression" and drift.evidence == "wall" and drift.machine_ratio is None
    assert judge(recorded, BASE).evidence == "wall"  # one side calibrated is not enough


# -- stored formats ----------------------------------------------------------------------------


def test_a_calibrated_timing_round_trips():
    t = dataclasses.replace(timed(1.3, wait=2e-3), retimed=2)
    assert Timing.from_dict(json.loads(json.dumps(t.to_dict()))) == t


def test_a_ratio_needs_its_interval_and_to_lie_within_it():
    for part in ("ratio_ci95", "wait_s", "wait_ci95", "calibration_s"):
        data = timed(1.3, wait=1e-3).to_dict()
        data[part] = None
        with pytest.raises(WorkloadDataError, match="ratio, ratio_ci95, wait_s, wait_ci95"):
            Timing.from_dict(data)
    data = timed(1.3, wait=1e-3).to_dict()
    data["wait_ci95"] = [-1e-3, 2e-3]
    with pytest.raises(WorkloadDataError, match=r"0 <= wait_ci95\[0\] <= wait_s"):
        Timing.from_dict(data)
    data = timed(1.3).to_dict()
    data["ratio_ci95"] = [1.4, 1.5]
    with pytest.raises(WorkloadDataError, match=r"ratio_ci95\[0\] <= ratio"):
        Timing.from_dict(data)
    data = timed(1.3).to_dict()
    data["calibration_s"] = 0
    with pytest.raises(WorkloadDataError, match="calibration_s"):
        Timing.from_dict(data)


#: The test whose workload the gate's baselines are of.
A = "t.py::a"


def workloads(nodeid=A, timing=None):
    recorder = WorkloadRecorder(nodeid)
    with recorder.recording(all_roots=True):
        TinyNet().eval()(torch.rand(1, 3, 8, 8))
    test = recorder.workloads()
    w = dataclasses.replace(test.workloads[0], timing=timing)
    return TestWorkloads(test.nodeid, (w,))


def test_a_baseline_stored_without_flops_loads_and_a_new_one_keeps_them():
    w = workloads(timing=BASE).workloads[0]
    device = DeviceIdentity("cpu", "x", "2.0", 2)
    data = Baseline.from_workload("t.py::a", w, device).to_dict()
    assert data["flops"] == w.flops
    del data["flops"]
    assert Baseline.from_dict(data).flops is None


# -- the gate and its messages ----------------------------------------------------------------


def gate_with_baseline(tmp_path, mode="on"):
    PerfGate(tmp_path, update=True).check(workloads(timing=BASE), 0.2)
    return PerfGate(tmp_path, mode=mode)


def test_the_gate_retimes_what_looks_slower_or_faster(tmp_path):
    gate = gate_with_baseline(tmp_path)
    h = workloads().workloads[0].hash
    assert gate.suspect(A, h, timed(1.5), 0.2)
    assert gate.suspect(A, h, timed(1.3, spread=0.2), 0.2)  # its interval proves nothing yet
    assert not gate.suspect(A, h, timed(1.05), 0.2)
    assert gate.suspect(A, h, timed(0.5), 0.2)  # faster: perhaps a sleep booked as queueing
    assert not gate.suspect(A, h, timed(0.9), 0.2)
    assert not gate.suspect(A, h, timed(1.0, wall=100.0), 0.2)  # a 100x slower machine
    assert not gate.suspect(A, "0" * 64, timed(9.0), 0.2)  # no baseline
    assert not gate.suspect("t.py::b", h, timed(9.0), 0.2)  # another test's baseline
    assert not PerfGate(tmp_path, update=True).suspect(A, h, timed(9.0), 0.2)
    # strict xdist workers replay and gate their timings: a suspect is re-timed there too
    assert PerfGate(tmp_path, mode="strict", workers=2).suspect(A, h, timed(1.5), 0.2)


def test_only_strict_xdist_workers_replay_workloads_for_timing(tmp_path):
    assert PerfGate(tmp_path).replays
    assert PerfGate(tmp_path, mode="off").replays
    assert PerfGate(tmp_path, mode="strict", workers=2).replays
    # beside other workers a timing is biased whatever the gate does with it
    assert not PerfGate(tmp_path, workers=2).replays
    assert not PerfGate(tmp_path, mode="off", workers=2).replays


def test_the_failure_says_which_evidence_decided(tmp_path):
    gate = gate_with_baseline(tmp_path)
    result = gate.check(workloads(timing=timed(1.43, wall=2.0e-3, kernel=1.4e-3, retimed=2)), 0.2)
    (failure,) = result.failures
    assert (
        "  slower: calibrated ratio 1.43x (95% interval 1.37–1.49x), tolerance 20%: compute "
        "relative to the calibration kernel timed beside it, waits in seconds; re-timed twice, "
        "judged on every timing's samples\n"
        "  wall time, context only: median 2.00 ms vs baseline 1.00 ms (2.00x), the calibration "
        "kernel 1.40x its baseline's time"
    ) in failure


def test_a_baseline_is_written_whatever_the_machine_did(tmp_path):
    gate = PerfGate(tmp_path, update=True)
    result = gate.check(workloads(timing=timed(1.0, wall=1.0, kernel=1.0)), 0.2)  # 1000x slower
    assert [n.kind for n in result.notes] == ["baseline recorded"]
    assert PerfGate(tmp_path).check(workloads(timing=BASE), 0.2).failures == ()


@pytest.mark.parametrize("n", [(1, 1), (1, 50), (50, 5)], ids=["1-1", "1-50", "50-5"])
def test_time_decides_nothing_on_too_few_samples(n):
    current, base = timed(10.0, n=n[0]), timed(1.0, n=n[1])
    drift = judge(current, base)
    assert drift.kind == "too few samples" and not worth_retiming(drift)
    assert judge(timed(10.0, n=6), timed(1.0, n=6)).kind == "regression"


def test_no_interval_is_printed_for_too_few_samples():
    w = workloads(timing=timed(2.0, wall=2.0, n=1, spread=0.0)).workloads[0]
    base = timed(1.0, wall=1.0, n=3)
    assert judge(w.timing, base).kind == "too few samples"
    assert format_timing(w.timing) == "2.00 s (n=1, replayed, cpu)"
    assert "95% CI" not in format_timing(base) and "IQR" in format_timing(base)
    assert "95% CI" in format_timing(timed(1.0, n=6))
