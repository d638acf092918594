import json
import math
import time

import pytest
import timm
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import sdpa_flop_count

from pytest_workload._core.errors import (
    CorruptFileError,
    DeviceUnavailableError,
    WorkloadDataError,
)
from pytest_workload._perf.baseline import Baseline, BaselineStore, judge
from pytest_workload._perf.device import (
    CpuDevice,
    DeviceIdentity,
    calibration_kernel,
    check_device_spec,
    device_for,
    resolve_device,
)
from pytest_workload._perf.replay import replay
from pytest_workload._perf.stopwatch import (
    Lap,
    TimingPolicy,
    Unmeasured,
    cpu_lap,
    measure,
    median_interval,
    run_delay_ns,
    summarize,
    time_call,
)
from pytest_workload._tracing.tracer import count_flops
from pytest_workload._workload.timing import MIN_SAMPLES, OFF, REPLAYED, Timing, not_measured


class FakeClock:
    """A clock that only moves when a fake call runs."""

    def __init__(self):
        self.now_ns = 0

    def __call__(self):
        return self.now_ns


def kernel():
    """The calibration kernel, which the fake stopwatch times at 1 ms a call."""


class FakeStopwatch:
    """Each call 'takes' the next duration from a list (cycled), each call of the kernel 1 ms;
    advances the clock."""

    def __init__(self, clock, durations_s):
        self.clock, self.durations, self.calls = clock, list(durations_s), 0

    def __call__(self, fn, number):
        total = 0.0
        for _ in range(number):
            if fn is kernel:
                total += 1e-3
                continue
            total += self.durations[self.calls % len(self.durations)]
            self.calls += 1
        self.clock.now_ns += int(total * 1e9)
        return Lap(total, total)


def timed_samples(stopwatch, policy, clock):
    return measure(lambda: None, stopwatch, policy, clock, reference=kernel, own_clock=clock).wall_s


def test_summary_statistics():
    t = summarize([1.0, 2.0, 3.0, 4.0, 100.0], "cpu")
    assert t.median_s == 3.0
    assert t.iqr_s == 2.0
    assert t.ci_s == (1.0, 100.0)  # too few samples: the whole range
    assert t.n == 5


def test_median_interval_uses_order_statistics():
    ordered = list(range(100))
    assert median_interval(ordered) == (39, 60)
    low, high = median_interval(list(range(1000)))
    assert 460 <= low < 500 < high <= 540


def test_a_budget_too_short_for_the_minimum_samples_cuts_the_timing_short():
    clock = FakeClock()
    stopwatch = FakeStopwatch(clock, [0.01])
    policy = TimingPolicy(budget_s=0.005, limit_s=0.05)
    samples = timed_samples(stopwatch, policy, clock)
    # two warm-up pairs (11 ms each; the first, a cold start, not counted) and three sampled
    # pairs (13 ms each) reach the 50 ms limit: a fourth would end past it
    assert samples == [0.01] * 3
    assert clock.now_ns / 1e9 == pytest.approx(0.011 + 0.05)


def test_a_one_second_call_adds_a_few_seconds():
    clock = FakeClock()
    stopwatch = FakeStopwatch(clock, [1.0])
    samples = timed_samples(stopwatch, TimingPolicy(), clock)
    # two warm-up calls, then one sample (and its kernel block, a quarter of it): a second
    # would end past the limit (2.5 s after the first call)
    assert samples == [1.0]
    assert clock.now_ns / 1e9 == pytest.approx(3.25, abs=0.01)


class FirstWaitsUnknown(FakeStopwatch):
    """The workload's first ``unknown`` blocks' waits are unknown (the kernel booked a sleep
    as waiting for a core): they give no sample."""

    def __init__(self, clock, durations_s, unknown):
        super().__init__(clock, durations_s)
        self.unknown = unknown

    def __call__(self, fn, number):
        lap = super().__call__(fn, number)
        if fn is kernel or self.calls <= 2:  # (the warm-up's calls are not samples)
            return lap
        self.unknown -= 1
        return Lap(lap.wall_s, lap.compute_s, None) if self.unknown >= 0 else lap


def test_past_the_limit_a_timing_still_takes_its_first_sample():
    # one second a call: the limit allows one pair of blocks, and that one gave no sample
    clock = FakeClock()
    samples = timed_samples(FirstWaitsUnknown(clock, [1.0], unknown=2), TimingPolicy(), clock)
    assert samples == [1.0]  # the third block's
    # a workload whose blocks never give one still stops, after 3 of them
    clock = FakeClock()
    never = FirstWaitsUnknown(clock, [1.0], unknown=10**6)
    assert timed_samples(never, TimingPolicy(), clock) == []
    assert clock.now_ns / 1e9 == pytest.approx(2 + 3 * 1.25, abs=0.01)


def test_precise_calls_stop_after_a_fifth_of_the_budget():
    clock = FakeClock()
    stopwatch = FakeStopwatch(clock, [0.01])
    samples = timed_samples(stopwatch, TimingPolicy(budget_s=1.0), clock)
    assert set(samples) == {0.01}
    assert clock.now_ns / 1e9 == pytest.approx(0.2, abs=0.011)  # not the whole budget


def test_noisy_calls_repeat_until_the_budget():
    clock = FakeClock()
    stopwatch = FakeStopwatch(clock, [0.01, 0.03, 0.02, 0.05])
    policy = TimingPolicy(budget_s=1.0, precision=0.0001)
    samples = timed_samples(stopwatch, policy, clock)
    assert 20 <= len(samples) <= 40  # ~1 s of 27.5 ms calls and 1 ms kernels, after the warm-up
    assert clock.now_ns / 1e9 == pytest.approx(1.0, abs=0.1)


def test_fast_calls_are_timed_in_blocks():
    clock = FakeClock()
    stopwatch = FakeStopwatch(clock, [1e-6])
    samples = timed_samples(stopwatch, TimingPolicy(budget_s=1.0), clock)
    assert samples[0] == pytest.approx(1e-6)
    assert stopwatch.calls >= 1000 * len(samples)  # each sample is a block of 1 ms


def test_a_slow_workload_gets_the_target_samples_past_the_budget():
    clock = FakeClock()
    stopwatch = FakeStopwatch(clock, [0.01, 0.011])
    policy = TimingPolicy(budget_s=0.1, precision=0.0)
    assert len(timed_samples(stopwatch, policy, clock)) == policy.target_samples


def test_the_overrun_bounds_a_very_slow_workload():
    clock = FakeClock()
    stopwatch = FakeStopwatch(clock, [0.05, 0.055])
    policy = TimingPolicy(budget_s=0.2, precision=0.0)
    samples = timed_samples(stopwatch, policy, clock)
    assert MIN_SAMPLES < len(samples) < policy.target_samples
    # stopped by the first pair of blocks (at most 70 ms here) past the overrun
    assert policy.budget_s * policy.overrun <= clock.now_ns / 1e9 <= 0.8 + 0.07


class CountingStopwatch(FakeStopwatch):
    """Counts the kernel's calls inside each timed block."""

    def __init__(self, clock, durations_s):
        super().__init__(clock, durations_s)
        self.kernel_blocks: list[int] = []

    def __call__(self, fn, number):
        if fn is counted_kernel:
            self.kernel_blocks.append(number)
            self.clock.now_ns += int(number * 1e6)
            return Lap(number * 1e-3, number * 1e-3)
        return super().__call__(fn, number)


UNTIMED = []


def counted_kernel():
    UNTIMED.append(1)


def test_the_kernel_block_follows_the_workload_block_and_starts_warm():
    clock = FakeClock()
    stopwatch = CountingStopwatch(clock, [0.04])
    policy = TimingPolicy(budget_s=0.1, precision=0.0)
    UNTIMED.clear()
    samples = measure(lambda: None, stopwatch, policy, clock, reference=counted_kernel).wall_s
    # after the warm-up's single calls, each block of the kernel lasts a quarter of the 40 ms
    # workload block, and one untimed call of the kernel precedes it
    blocks = stopwatch.kernel_blocks[-len(samples) :]
    assert blocks == [10] * len(samples)
    assert len(UNTIMED) == len(samples)


def test_max_samples_bounds_the_loop():
    clock = FakeClock()
    stopwatch = FakeStopwatch(clock, [0.001, 0.002])
    policy = TimingPolicy(budget_s=1e9, precision=0.0, max_samples=50)
    assert len(timed_samples(stopwatch, policy, clock)) == 50


def test_cpu_stopwatch_uses_its_clock():
    ticks = iter([0, 2_000_000_000])
    thread = iter([0, 500_000_000])
    lap = cpu_lap(lambda: None, 4, lambda: next(ticks), lambda: next(thread), lambda: None)
    assert lap == Lap(2.0, 0.5)  # no run-queue waits known: CPU time


@pytest.mark.parametrize(
    ("run_delay_s", "wait_s"),
    [
        (0.0, 1.5),  # 1.5 s off the CPU, not waiting for a core: a sleep, a wait of its own
        (1.0, 0.5),  # 1 s of it waiting for a core: a neighbour's, taken out
        (1.5, 0.0),  # all of it waiting for a core
    ],
)
def test_cpu_stopwatch_counts_waits_but_not_waits_for_a_core(run_delay_s, wait_s):
    ticks = iter([0, 2_000_000_000])
    thread = iter([0, 500_000_000])
    delays = iter([7, 7 + int(run_delay_s * 1e9)])
    lap = cpu_lap(lambda: None, 4, lambda: next(ticks), lambda: next(thread), lambda: next(delays))
    assert lap == Lap(2.0, 0.5, pytest.approx(wait_s))  # the CPU time is the compute
    assert lap.ratio_s == pytest.approx(0.5 + wait_s)


def test_a_block_whose_waits_for_a_core_exceed_its_time_off_the_cpu_has_unknown_waits():
    # 1.5 s off the CPU, 1.9 s of it counted as waiting for a core: a wait from outside the
    # block (a sleep of a task left queued), so its own waits are not known
    ticks, thread = iter([0, 2_000_000_000]), iter([0, 500_000_000])
    delays = iter([7, 7 + 1_900_000_000])
    lap = cpu_lap(lambda: None, 4, lambda: next(ticks), lambda: next(thread), lambda: next(delays))
    assert lap == Lap(2.0, 0.5, None) and lap.ratio_s == 0.5


class UnknownWaits:
    """Every ``every``-th workload block has unknown waits (all when ``every`` is 1); each
    call computes 1 ms and waits 1 ms, the kernel's 1 ms."""

    def __init__(self, every):
        self.every, self.blocks = every, 0

    def __call__(self, fn, number):
        if fn is not _workload:
            return Lap(1e-3 * number, 1e-3 * number)
        self.blocks += 1
        wait = None if self.blocks % self.every == 0 else 1e-3 * number
        return Lap(2e-3 * number, 1e-3 * number, wait)


def _workload():
    """The workload the stopwatch above times."""


def test_a_block_with_unknown_waits_gives_no_sample():
    policy = TimingPolicy(budget_s=0, min_samples=8, max_samples=12)
    samples = measure(_workload, UnknownWaits(every=3), policy, reference=lambda: None)
    assert len(samples.wall_s) == len(samples.waits_s) == 8  # 12 pairs, 4 left out
    assert samples.waits_s == [pytest.approx(1e-3)] * 8


def test_a_timing_with_no_known_waits_is_not_measured():
    policy = TimingPolicy(budget_s=0, max_samples=10)
    with pytest.raises(Unmeasured, match="no block of calls could be timed"):
        time_call(_workload, UnknownWaits(every=1), policy, "cpu", lambda: None)


def test_cpu_stopwatch_sees_a_real_sleep():
    if run_delay_ns() is None:
        pytest.skip("this kernel does not report run-queue waits")
    # A sleep takes no CPU time; the thread clock alone sees none. Beside spinning neighbours a
    # kernel may count some of a sleep as a run-queue wait (a lap then falls back to the CPU
    # time): the real clock must see the sleep in one of a few laps, whatever the load.
    cpu = device_for(torch.device("cpu"))
    assert isinstance(cpu, CpuDevice)
    laps = [cpu.lap(lambda: time.sleep(0.02), 1) for _ in range(5)]
    assert max(lap.ratio_s for lap in laps) >= 0.02


def timing(median, low, high, n=50):
    return Timing(median, 0.0, n, (low, high), "cpu")


def test_judge_needs_the_slowdown_beyond_tolerance_and_noise():
    base = timing(1.0, 0.98, 1.02)
    assert judge(timing(3.0, 2.9, 3.1), base, 0.2).kind == "regression"
    assert judge(timing(1.1, 1.08, 1.12), base, 0.2).kind == "unchanged"
    # 1.5x on the median, but the intervals overlap the tolerance: noise, no verdict
    assert judge(timing(1.5, 1.1, 2.5), base, 0.2).kind == "unchanged"
    assert judge(timing(0.3, 0.29, 0.31), base, 0.2).kind == "faster"
    drift = judge(timing(3.0, 2.9, 3.1), base, 0.2)
    assert drift.ratio == 3.0
    assert drift.ratio_low == pytest.approx(2.9 / 1.02)
    assert drift.ratio_high == pytest.approx(3.1 / 0.98)


def test_a_stored_timing_must_be_ordered_and_positive():
    data = summarize([0.1] * 7, "cpu").to_dict()
    data["median_s"] = 0.0
    data["ci95_s"] = [0.0, 0.0]
    with pytest.raises(WorkloadDataError, match="0 < ci95_s"):
        Timing.from_dict(data)


def test_timing_round_trips():
    t = summarize([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], "cuda:0")
    assert Timing.from_dict(json.loads(json.dumps(t.to_dict()))) == t


def test_replay_counts_flops_and_restores_state():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4), nn.BatchNorm1d(4), nn.Dropout(0.5)).train()
    x = torch.rand(16, 8)
    before = [b.clone() for b in model.buffers()]
    rng = torch.get_rng_state()
    measured = replay(model, model, (x,), {}, TimingPolicy(budget_s=0.01))
    assert measured.problem is None
    assert measured.counted == 2 * 16 * 8 * 4
    assert measured.timed is not None and measured.timed.device == "cpu"
    assert measured.timing == measured.flops == REPLAYED
    assert all(torch.equal(a, b) for a, b in zip(before, model.buffers(), strict=True))
    assert torch.equal(torch.get_rng_state(), rng)
    assert model.training


def test_replay_without_policy_counts_flops_only():
    measured = replay(nn.Linear(3, 3), nn.Linear(3, 3), (torch.rand(2, 3),), {}, None)
    assert measured.timed is None and measured.counted == 2 * 2 * 3 * 3
    assert measured.timing == OFF


def test_replay_reports_a_failing_call():
    class Once(nn.Module):
        calls = 0

        def forward(self, x):
            Once.calls += 1
            if Once.calls > 1:
                raise RuntimeError("stateful model")
            return x

    model = Once()
    model(torch.rand(1))
    measured = replay(model, model, (torch.rand(1),), {}, TimingPolicy(budget_s=0.01))
    assert "the replay raised RuntimeError: stateful model" in measured.problem
    assert measured.timed is None and measured.timing == not_measured(measured.problem)


def test_flops_are_shape_based():
    lin = nn.Linear(10, 10)
    assert count_flops(lin, (torch.rand(4, 10),), {}) == 2 * count_flops(
        lin, (torch.rand(2, 10),), {}
    )


class Attention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def test_cpu_attention_counts_what_the_cuda_kernels_count():
    q, k, v = torch.rand(2, 4, 5, 8), torch.rand(2, 4, 7, 8), torch.rand(2, 4, 7, 8)
    expected = sdpa_flop_count(q.shape, k.shape, v.shape)
    # a replay runs under no_grad, where CPU takes its fused kernel
    assert replay(Attention(), Attention(), (q, k, v), {}, None).counted == expected
    # with autograd, CPU runs the matmuls of the math path: counted once, the same
    assert count_flops(Attention(), (q.requires_grad_(), k, v), {}) == expected


def test_a_vision_transformer_counts_its_attention():
    fused = timm.create_model("vit_tiny_patch16_224", pretrained=False).eval()
    explicit = timm.create_model("vit_tiny_patch16_224", pretrained=False).eval()
    for block in explicit.blocks:
        block.attn.fused_attn = False  # q @ k.T, softmax, @ v: plain matmuls
    x = torch.rand(1, 3, 224, 224)
    flops = replay(fused, fused, (x,), {}, None).counted
    assert flops == replay(explicit, explicit, (x,), {}, None).counted


def test_device_specs():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in ("cpu", "cuda", "mps")
    with pytest.raises(DeviceUnavailableError, match="unknown workload device 'tpu'"):
        check_device_spec("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailableError, match="'cuda:1' asked for, but CUDA is not"):
            resolve_device("cuda:1")


def test_baseline_store_round_trip_and_corrupt_file(tmp_path):
    identity = DeviceIdentity("cpu", "Test CPU @ 3GHz", "2.14.1", 2)
    store = BaselineStore(tmp_path, identity)
    t = summarize([0.01] * 7, "cpu")
    baseline = Baseline("t.py::a", "ab" * 32, "model", "m.Net", "()", ["s", [], {}], identity, t)
    path = store.put(baseline)
    directory = tmp_path / "cpu-Test_CPU_3GHz-torch2.14.1-threads2" / ("ab" * 32)
    assert path.parent == directory and path.suffix == ".json"
    assert store.get("ab" * 32, "t.py::a") == baseline
    assert store.all() == [baseline]
    assert store.get("cd" * 32, "t.py::a") is None
    assert store.get("ab" * 32, "t.py::b") is None  # another test's
    path.write_text("{not json")
    with pytest.raises(CorruptFileError, match=r"\.json: is not valid JSON"):
        store.get("ab" * 32, "t.py::a")
    assert path.read_text() == "{not json"


def test_timing_of_a_real_call_is_positive_and_consistent():
    lin = nn.Linear(64, 64)
    x = torch.rand(32, 64)
    with torch.no_grad():
        samples = measure(
            lambda: lin(x),
            cpu_lap,
            TimingPolicy(budget_s=0.05),
            reference=calibration_kernel("cpu"),
        )
    t = summarize(
        samples.wall_s,
        "cpu",
        ratios=samples.ratios,
        waits_s=samples.waits_s,
        calibration_s=samples.calibration_s,
    )
    assert 0 < t.ci_s[0] <= t.median_s <= t.ci_s[1]
    assert t.ratio is not None and t.ratio_ci is not None
    assert 0 < t.ratio_ci[0] <= t.ratio <= t.ratio_ci[1]
    assert t.wait_s is not None and t.wait_ci is not None
    assert 0 <= t.wait_ci[0] <= t.wait_s <= t.wait_ci[1]
    assert t.calibration_s is not None and t.calibration_s > 0
    assert not math.isnan(t.iqr_s)


THREADS_SEEN: set[int] = set()


class ThreadCounting(nn.Module):
    """Records torch's intra-op thread count at each call (outside the module, which a replay
    puts back)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        THREADS_SEEN.add(torch.get_num_threads())
        return self.lin(x)


def test_a_cpu_replay_is_timed_on_one_thread_and_says_so():
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        model = ThreadCounting()
        THREADS_SEEN.clear()
        result = replay(
            model, model, (torch.rand(2, 4),), {}, TimingPolicy(budget_s=0.01), count=False
        )
        assert torch.get_num_threads() == 3  # torch's count is back
    finally:
        torch.set_num_threads(before)
    assert result.timed is not None and result.timed.threads == 1
    assert sorted(THREADS_SEEN) == [1]
    assert device_for(torch.device("cpu")).identity().threads == 1
