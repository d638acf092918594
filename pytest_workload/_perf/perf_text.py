"""The failure texts of the performance gate: regressions, faster workloads, missing
baselines, too few samples."""

from __future__ import annotations

from .._core.text import Commands, _count, format_duration, one_line, short
from .._workload.timing import MIN_SAMPLES, Timing
from .._workload.workload import Workload
from .baseline import Baseline
from .drift import Drift


def _describe(w: Workload) -> str:
    return one_line(f"{w.label} ({w.class_name}), input {w.input_signature.format()}")


def _workload_title(w: Workload) -> str:
    return f"{_describe(w)}, hash {short(w.hash)}"


_TIMES = {1: "once", 2: "twice"}


def _retimed(t: Timing) -> str:
    if not t.retimed:
        return ""
    times = _TIMES.get(t.retimed, f"{t.retimed} times")
    return f"; re-timed {times}, judged on every timing's samples"


def _evidence(current: Timing, drift: Drift) -> str:
    """Which evidence decided, in the words of the failure message."""
    if drift.evidence == "flops":
        assert drift.flops_ratio is not None
        return (
            f"FLOPs {drift.flops_ratio:.2f}x the baseline's: counted from shapes, so no "
            f"machine load explains it (wall {drift.wall_ratio:.2f}x)"
        )
    if drift.evidence == "calibrated":
        machine = "" if drift.machine_ratio is None else f", the kernel {drift.machine_ratio:.2f}x"
        return (
            f"time relative to the calibration kernel {drift.ratio:.2f}x (wall "
            f"{drift.wall_ratio:.2f}x{machine}){_retimed(current)}"
        )
    return f"wall {drift.ratio:.2f}x (no calibration to compare){_retimed(current)}"


def _interval(t: Timing) -> str:
    if not t.has_interval:
        return f"n={t.n}, too few for an interval"
    return f"95% CI {format_duration(t.ci_low_s)}–{format_duration(t.ci_high_s)} (n={t.n})"


def render_regression(
    w: Workload, baseline: Timing, drift: Drift, device: str, commands: Commands
) -> str:
    current = w.timing
    assert current is not None
    ratio = f"{drift.ratio:.2f}x slower" + (" calibrated" if drift.evidence == "calibrated" else "")
    if current.has_interval and baseline.has_interval:
        ratio += (
            f" (95% interval of the ratio {drift.ratio_low:.2f}–{drift.ratio_high:.2f}x; "
            f"tolerance {drift.tolerance:.0%})"
        )
    else:
        ratio += f" (tolerance {drift.tolerance:.0%})"
    return "\n".join(
        [
            f"performance regression: {_workload_title(w)}",
            f"  decided by {_evidence(current, drift)}",
            f"  median {format_duration(current.median_s)} vs baseline "
            f"{format_duration(baseline.median_s)}: {ratio}",
            f"  current {_interval(current)}, baseline {_interval(baseline)}",
            f"  on {device}; accept the new timing with {commands.baseline}",
        ]
    )


def render_faster(w: Workload, baseline: Timing, drift: Drift, commands: Commands) -> str:
    assert w.timing is not None
    line = (
        f"{_workload_title(w)} is {1 / drift.ratio:.2f}x faster than its baseline "
        f"({format_duration(w.timing.median_s)} vs {format_duration(baseline.median_s)})"
    )
    return line + f"; refresh the baseline with {commands.baseline}"


def render_missing_baseline(
    w: Workload, device: str, nearest: tuple[Baseline, float] | None, commands: Commands
) -> str:
    # the same text in every test that runs the workload (whatever a test calls its model),
    # so the session shows it once
    workload = (
        one_line(f"{w.class_name}, input {w.input_signature.format()}") + f", hash {short(w.hash)}"
    )
    line = f"no timing baseline for {workload} on {device}"
    if nearest is not None:
        other, factor = nearest
        expected = other.timing.median_s * factor
        line += (
            f"; nearest compatible baseline: {one_line(f'{other.name} {other.input}')} "
            f"({format_duration(other.timing.median_s)}) at distance factor {factor:g}, so "
            f"about {format_duration(expected)} expected if time scales with size"
        )
    return f"{line}; record one with {commands.baseline}"


def render_too_few(w: Workload, baseline: Timing, drift: Drift) -> str:
    """A timing compared with its baseline on too few samples to say anything."""
    current = w.timing
    assert current is not None
    return (
        f"{_workload_title(w)}: {drift.ratio:.2f}x its baseline, not judged: timed on "
        f"{_count(current.n, 'sample')} against the baseline's {baseline.n}, and a verdict "
        f"needs {MIN_SAMPLES} on each side"
    )
