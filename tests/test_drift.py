"""The drift gate's evidence, with injected clocks and load probes: no test here depends on
the machine's load or core count."""

import dataclasses
import json

import pytest
import torch

from pytest_workload import TestWorkloads, WorkloadRecorder
from pytest_workload._gate.perf import PerfGate
from pytest_workload._measure import timing as timing_module
from pytest_workload._measure.load import LoadProbe
from pytest_workload._measure.timing import TimingPolicy, summarize, time_call
from pytest_workload._model.baseline import Baseline
from pytest_workload._model.device import DeviceIdentity
from pytest_workload._model.errors import WorkloadDataError
from pytest_workload._model.timing import Timing
from pytest_workload._render.commands import PLAIN
from pytest_workload._render.failures import render_contended, render_regression
from pytest_workload._render.report import format_timing
from pytest_workload._verdict.drift import judge, worth_retiming
from tests.models import TinyNet


def timed(wall, cpu=None, load=None, n=50, spread=0.02, retimed=0):
    """A timing of ``wall`` seconds per call (and ``cpu`` of thread CPU time), +-2%."""
    cpu_fields = {}
    if cpu is not None:
        cpu_fields = dict(
            cpu_median_s=cpu, cpu_ci_low_s=cpu * (1 - spread), cpu_ci_high_s=cpu * (1 + spread)
        )
    return Timing(
        wall,
        0.0,
        n,
        wall * (1 - spread),
        wall * (1 + spread),
        "cpu",
        others_load=load,
        retimed=retimed,
        **cpu_fields,
    )


BASE = timed(1.0, cpu=1.0, load=0.0)


# -- the load probe ----------------------------------------------------------------------------


def test_the_load_probe_reads_the_thread_that_waited_most():
    waits = iter([{"1": 0, "2": 0, "3": 7}, {"1": 200, "2": 600, "9": 5}])
    pressure = iter([1_000, 1_400])  # µs some task waited for a CPU
    wall = iter([0, 1_000])  # ns
    with LoadProbe(lambda: next(waits), lambda: next(pressure), lambda: next(wall)) as probe:
        pass
    assert probe.others == pytest.approx(0.6)  # thread 2 waited 600 of 1000 ns
    assert probe.pressure == 1.0  # 400 µs over 1 µs: clamped to a share


def test_the_load_probe_knows_nothing_without_schedstat_or_psi():
    wall = iter([0, 10])
    with LoadProbe(lambda: None, lambda: None, lambda: next(wall)) as probe:
        pass
    assert probe.others is None and probe.pressure is None


def test_the_kernel_probes_read_this_machine():
    with LoadProbe() as probe:
        sum(range(10_000))
    for share in (probe.others, probe.pressure):
        assert share is None or 0 <= share <= 1


# -- re-timing ---------------------------------------------------------------------------------


class RoundStopwatch:
    """Every call of round ``r`` takes ``durations[r]`` seconds; a round is one timing."""

    def __init__(self, durations):
        self.durations, self.round = durations, 0

    def __call__(self, fn, number):
        return self.durations[min(self.round, len(self.durations) - 1)] * number


def policy_for(stopwatch, suspect_above):
    def suspect(workload, t):
        assert workload == "h"
        stopwatch.round += 1
        return t.median_s > suspect_above

    return TimingPolicy(budget_s=0, max_samples=8, suspect=suspect).for_workload("h")


def test_a_stall_in_one_timing_is_outvoted_by_its_re_timings():
    stopwatch = RoundStopwatch([5.0, 1.0, 1.0])  # a 5x stall, then the workload's own time
    t = time_call(lambda: None, stopwatch, policy_for(stopwatch, 2.0), "cpu")
    assert t.median_s == 1.0 and t.retimed == 2 and t.n == 18  # 6 samples a round, all kept


def test_a_regression_slower_each_time_is_judged_on_every_round():
    stopwatch = RoundStopwatch([4.0, 3.0, 3.5])  # then 3.5 in every further round
    t = time_call(lambda: None, stopwatch, policy_for(stopwatch, 2.0), "cpu")
    assert t.median_s == 3.5 and t.retimed == TimingPolicy().retimes == 4


def test_re_timing_stops_once_the_samples_clear_it():
    stopwatch = RoundStopwatch([3.0, 1.0, 1.0])
    policy = policy_for(stopwatch, 2.5)
    t = time_call(lambda: None, stopwatch, policy, "cpu")
    assert t.retimed == 1 and t.median_s == 2.0 and stopwatch.round == 2


def test_nothing_is_re_timed_without_a_suspect():
    stopwatch = RoundStopwatch([4.0, 1.0])
    assert time_call(lambda: None, stopwatch, TimingPolicy(budget_s=0), "cpu").retimed == 0
    bound = TimingPolicy(budget_s=0, suspect=lambda *_: True)  # not bound to a workload
    assert time_call(lambda: None, stopwatch, bound, "cpu").retimed == 0


def test_time_call_records_thread_cpu_time_and_load(monkeypatch):
    class Probe:
        others, pressure = 0.4, 0.7

        def __enter__(self):
            return self

        def __exit__(self, *_):
            pass

    monkeypatch.setattr(timing_module, "LoadProbe", Probe)
    clock, thread = iter(range(0, 10**9, 1000)), iter(range(0, 10**9, 500))
    stopwatch = timing_module.CpuStopwatch(lambda: next(clock), lambda: next(thread))
    t = time_call(lambda: None, stopwatch, TimingPolicy(budget_s=0, max_samples=6), "cpu")
    assert t.cpu_median_s == pytest.approx(t.median_s / 2)
    assert (t.others_load, t.cpu_pressure) == (0.4, 0.7)


# -- the verdict -------------------------------------------------------------------------------


def test_thread_cpu_time_confirms_a_regression_whatever_the_load():
    drift = judge(timed(1.41, cpu=1.4, load=0.9), BASE)
    assert drift.kind == "regression" and drift.evidence == "cpu" and not drift.contended
    assert drift.cpu_ratio == pytest.approx(1.4)


def test_several_intra_op_threads_under_load_are_excused_not_failed():
    # measured on unchanged examples with 2 threads beside 3 busy loops: wall 17x, CPU 7x
    pooled = judge(timed(17.0, cpu=7.0, load=0.61), BASE, threads=2)
    assert pooled.kind == "regression" and pooled.evidence == "cpu" and pooled.contended
    wall_only = judge(timed(17.0, load=0.61), BASE, threads=2)
    assert wall_only.kind == "regression" and wall_only.contended
    # one thread: its CPU time is its own work, and decides
    assert not judge(timed(17.0, cpu=7.0, load=0.61), BASE, threads=1).contended
    # several threads on a quiet machine: nothing to excuse
    assert not judge(timed(17.0, cpu=7.0, load=0.05), BASE, threads=2).contended
    # more FLOPs is a regression whatever the threads and the load
    flops = judge(timed(17.0, cpu=7.0, load=0.61), BASE, flops=(200, 100), threads=2)
    assert flops.evidence == "flops" and not flops.contended


def test_a_100x_stall_spent_waiting_for_a_core_is_excused():
    drift = judge(timed(100.0, cpu=1.01, load=0.99), BASE)
    assert drift.kind == "regression" and drift.evidence == "off-cpu" and drift.contended


def test_extra_time_off_the_cpu_without_waiting_is_a_regression():
    drift = judge(timed(3.0, cpu=1.0, load=0.0), BASE)  # sleeping, blocking, I/O
    assert drift.kind == "regression" and drift.evidence == "off-cpu" and not drift.contended


def test_within_tolerance_cpu_time_is_unchanged():
    assert judge(timed(1.1, cpu=1.1, load=0.0), BASE).kind == "unchanged"


def test_flops_beyond_the_tolerance_are_a_regression_no_load_excuses():
    drift = judge(timed(1.0, cpu=1.0, load=0.9), BASE, 0.2, (150, 100))
    assert drift.kind == "regression" and drift.evidence == "flops" and not drift.contended
    assert drift.flops_ratio == 1.5
    assert judge(timed(1.0, cpu=1.0), BASE, 0.2, (110, 100)).kind == "unchanged"


def test_a_baseline_without_cpu_time_is_judged_on_wall_time_and_load():
    old = Timing(1.0, 0.0, 50, 0.98, 1.02, "cpu")
    drift = judge(timed(2.0, cpu=2.0, load=0.6), old)
    assert drift.evidence == "wall" and drift.cpu_ratio is None and drift.contended
    assert not judge(timed(2.0, cpu=2.0, load=0.0), old).contended


# -- stored formats ----------------------------------------------------------------------------


def test_a_timing_stored_before_the_new_fields_loads():
    old = {
        "median_s": 0.01,
        "iqr_s": 0.001,
        "n": 20,
        "ci95_s": [0.009, 0.011],
        "device": "cpu",
        "source": "replay",
        "others_load": None,
    }
    t = Timing.from_dict(old)
    assert t.cpu_median_s is None and t.cpu_pressure is None and t.retimed == 0


def test_a_timing_with_cpu_time_and_load_round_trips():
    t = summarize([0.1] * 7, "cpu", others_load=0.3, cpu_samples_s=[0.09] * 7, cpu_pressure=0.5)
    t = dataclasses.replace(t, retimed=2)
    assert Timing.from_dict(json.loads(json.dumps(t.to_dict()))) == t


def test_a_share_out_of_range_is_rejected():
    data = summarize([0.1] * 7, "cpu").to_dict()
    data["cpu_pressure"] = 1.5
    with pytest.raises(WorkloadDataError, match="cpu_pressure"):
        Timing.from_dict(data)


def workloads(nodeid="t.py::a", timing=None):
    recorder = WorkloadRecorder(nodeid)
    with recorder.recording(all_roots=True):
        TinyNet().eval()(torch.rand(1, 3, 8, 8))
    test = recorder.workloads()
    w = dataclasses.replace(test.workloads[0], timing=timing)
    return TestWorkloads(test.nodeid, (w,))


def test_a_baseline_stored_without_flops_loads_and_a_new_one_keeps_them():
    w = workloads(timing=BASE).workloads[0]
    device = DeviceIdentity("cpu", "x", "2.0", 2)
    data = Baseline.from_workload(w, device).to_dict()
    assert data["flops"] == w.flops
    del data["flops"]
    assert Baseline.from_dict(data).flops is None


# -- the gate and its messages ----------------------------------------------------------------


def gate_with_baseline(tmp_path, mode="on"):
    PerfGate(tmp_path, mode="strict", update=True).check(workloads(timing=BASE), 0.2)
    return PerfGate(tmp_path, mode=mode)


def test_the_gate_retimes_what_it_would_fail_or_what_looks_slower(tmp_path):
    gate = gate_with_baseline(tmp_path)
    h = workloads().workloads[0].hash
    assert gate.suspect(h, timed(1.5, cpu=1.5, load=0.0), 0.2)
    assert not gate.suspect(h, timed(1.05, cpu=1.05), 0.2)
    assert not gate.suspect(h, timed(0.5, cpu=0.5), 0.2)  # faster
    # excused by the load, but slower by its median: more samples may prove it
    assert gate.suspect(h, timed(100.0, cpu=1.0, load=0.99), 0.2)
    assert gate.suspect(h, timed(1.1, cpu=1.3, load=0.5), 0.2)  # thread CPU time looks slower
    assert gate_with_baseline(tmp_path, "strict").suspect(h, timed(100.0, cpu=1.0, load=0.99), 0.2)
    assert not gate.suspect("0" * 64, timed(9.0), 0.2)  # no baseline
    assert not PerfGate(tmp_path, update=True).suspect(h, timed(9.0), 0.2)
    # strict xdist workers replay and gate their timings: a suspect is re-timed there too
    assert PerfGate(tmp_path, mode="strict", workers=2).suspect(h, timed(1.5, cpu=1.5), 0.2)


def test_only_strict_xdist_workers_replay_workloads_for_timing(tmp_path):
    assert PerfGate(tmp_path).replays
    assert PerfGate(tmp_path, mode="off").replays
    assert PerfGate(tmp_path, mode="strict", workers=2).replays
    # beside other workers a timing is biased whatever the gate does with it
    assert not PerfGate(tmp_path, workers=2).replays
    assert not PerfGate(tmp_path, mode="off", workers=2).replays


def test_the_failure_says_which_evidence_decided(tmp_path):
    gate = gate_with_baseline(tmp_path)
    result = gate.check(workloads(timing=timed(1.43, cpu=1.41, load=0.1, retimed=2)), 0.2)
    (failure,) = result.failures
    assert "  decided by thread CPU time 1.41x, wall 1.43x; re-timed twice, judged on every " in (
        failure
    )


def test_a_stall_is_a_note_naming_the_command_that_gates_it(tmp_path):
    gate = gate_with_baseline(tmp_path)
    result = gate.check(workloads(timing=timed(100.0, cpu=1.0, load=0.99)), 0.2)
    assert result.failures == ()
    (note,) = result.notes
    assert note.kind == "not judged: load"
    assert "wall 100.00x its baseline, thread CPU time 1.00x, not judged" in note.text
    assert "--workload-perf=strict" in note.text and "unknown" not in note.text
    strict = gate_with_baseline(tmp_path, "strict")
    assert strict.check(workloads(timing=timed(100.0, cpu=1.0, load=0.99)), 0.2).failures


@pytest.mark.parametrize("n", [(1, 1), (1, 50), (50, 5)], ids=["1-1", "1-50", "50-5"])
def test_time_decides_nothing_on_too_few_samples(n):
    current, base = timed(10.0, cpu=10.0, n=n[0]), timed(1.0, cpu=1.0, n=n[1])
    drift = judge(current, base)
    assert drift.kind == "too few samples" and not worth_retiming(drift)
    assert judge(timed(10.0, n=6), timed(1.0, n=6)).kind == "regression"


def test_flops_decide_on_too_few_samples_and_no_interval_is_printed():
    w = workloads(timing=timed(2.0, n=1, spread=0.0)).workloads[0]
    base = timed(1.0, n=3)
    drift = judge(w.timing, base, flops=(64, 32))
    assert drift.kind == "regression" and drift.evidence == "flops"
    text = render_regression(w, base, drift, "cpu", PLAIN)
    assert "95%" not in text and "n=1, too few for an interval" in text
    assert format_timing(w.timing) == "2.00 s (n=1, replayed, cpu)"
    assert "95% CI" not in format_timing(base) and "IQR" in format_timing(base)
    assert "95% CI" in format_timing(timed(1.0, n=6))


def test_the_contended_note_names_the_wait():
    w = workloads(timing=timed(3.0, cpu=1.0, load=0.8)).workloads[0]
    note = render_contended(w, BASE, judge(w.timing, BASE))
    assert "waited for a core 80% of its wall time" in note


def test_thread_cpu_time_decides_where_preemptions_widened_the_wall_interval():
    preempted = timed(1.5, cpu=1.35, load=0.8, spread=0.02)
    preempted = dataclasses.replace(preempted, ci_low_s=1.0, ci_high_s=9.0)  # wall: no verdict
    drift = judge(preempted, BASE)
    assert drift.kind == "regression" and drift.evidence == "cpu" and not drift.contended
    # the wall median within the tolerance: the CPU time alone fails nothing
    assert judge(dataclasses.replace(preempted, median_s=1.1), BASE).kind == "unchanged"
