"""A timing as data: median, spread and a 95% interval of per-call times, the workload's
compute relative to the calibration kernel timed beside it and its waits; and how a workload's
timing and FLOPs were obtained (:class:`Measured`), as stored in the JSON report."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from .._core.errors import WorkloadDataError
from .._core.strict_json import Json, read_field, read_object

#: Samples (for a replay: workload/calibration pairs) a timing needs to be judged against
#: another: the fewest whose range is a 95% confidence interval of the median whatever the
#: distribution (all n samples fall on one side of the median with probability 2 * 0.5**n:
#: 6.3% for 5, 3.1% for 6). With fewer, a timing is one moment of the machine, and neither
#: fails a test nor becomes a baseline.
MIN_SAMPLES: Final = 6


@dataclass(frozen=True)
class Timing:
    """Per-call time of one workload, as ``Workload.timing`` holds it.

    Example:
        ``median_s=0.00324, ci_low_s=0.00316, ci_high_s=0.00332, n=66`` reads "3.24 ms a call,
        and the true median lies between 3.16 and 3.32 ms with 95% confidence".

    Wall-clock times are what a user reads. The drift gate judges the calibrated time
    instead (:meth:`calibrated`): a replay's compute relative to the calibration kernel timed
    beside it, and its waits apart, in seconds. A machine that is slower for the workload and
    the kernel alike does not fail the gate, and a wait (a ``sleep``, I/O), which does not get
    faster with the machine, is not divided by the machine's speed.

    Attributes:
        median_s: Median seconds per call.
        iqr_s: Interquartile range of the per-call times, in seconds.
        n: Samples taken (for a replay: workload/calibration pairs).
        ci_low_s: Low end of the median's 95% confidence interval, in seconds.
        ci_high_s: High end of it.
        device: The device it ran on (``cpu``, ``cuda:0``).
        source: ``replay`` when the plugin replayed the call after the test, ``recorded
            calls`` when the times come from the test's own calls (submodules, and top-level
            workloads that were not replayed).
        ratio: The median over pairs of the workload's compute per call (CPU time on the CPU,
            device time elsewhere) over the calibration kernel's; None without a calibration
            (times from the test's own calls).
        ratio_ci: Its 95% interval, ``(low, high)``; None with ``ratio``.
        wait_s: The median over pairs of the seconds per call the timing thread waited for
            anything but a core (a ``sleep``, I/O, a lock), not calibrated; 0 where waits are
            not seen (devices, or no run-queue waits known); None with ``ratio``.
        wait_ci: Its 95% interval; None with ``ratio``.
        calibration_s: The calibration kernel's median per call on the ratio clock: how fast
            the machine ran; None with ``ratio``.
        retimed: How many fresh re-timings a suspected regression got before this one was
            kept.
        threads: The intra-op threads a replay on the CPU ran on (one, whatever torch's
            default); None elsewhere.
    """

    median_s: float
    iqr_s: float
    n: int
    ci_low_s: float
    ci_high_s: float
    device: str
    source: str = "replay"
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = None
    wait_s: float | None = None
    wait_ci: tuple[float, float] | None = None
    calibration_s: float | None = None
    retimed: int = 0
    threads: int | None = None

    @property
    def has_interval(self) -> bool:
        """Whether ``n`` allows a 95% interval of the median (``MIN_SAMPLES``, 6, at least),
        and so a verdict."""
        return self.n >= MIN_SAMPLES

    def calibrated(self, kernel_s: float) -> tuple[float, float, float] | None:
        """Seconds per call, and their 95% interval, had the machine run the calibration
        kernel in ``kernel_s``: the compute scaled to that speed, the waits as they were.
        None without a calibration. (The interval adds the parts' interval ends: wider, not
        narrower, than the sum's own.)"""
        if self.ratio is None or self.ratio_ci is None or self.wait_s is None:
            return None
        assert self.wait_ci is not None
        return (
            self.ratio * kernel_s + self.wait_s,
            self.ratio_ci[0] * kernel_s + self.wait_ci[0],
            self.ratio_ci[1] * kernel_s + self.wait_ci[1],
        )

    def to_dict(self) -> dict[str, Json]:
        """The timing as the JSON report holds it."""
        return {
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "n": self.n,
            "ci95_s": [self.ci_low_s, self.ci_high_s],
            "device": self.device,
            "source": self.source,
            "ratio": self.ratio,
            "ratio_ci95": None if self.ratio_ci is None else list(self.ratio_ci),
            "wait_s": self.wait_s,
            "wait_ci95": None if self.wait_ci is None else list(self.wait_ci),
            "calibration_s": self.calibration_s,
            "retimed": self.retimed,
            "threads": self.threads,
        }

    @classmethod
    def from_dict(cls, data: object) -> Timing:
        """The timing from parsed JSON; malformed data raises ``WorkloadError``."""
        d = read_object(data, "timing")
        median = float(read_field(d, "median_s", float, int))
        low, high = _interval(d, "ci95_s", "median_s", median)
        iqr = float(read_field(d, "iqr_s", float, int))
        if not 0 <= iqr < math.inf:
            raise WorkloadDataError(f"iqr_s must be a finite number >= 0, got {iqr}")
        n = read_field(d, "n", int)
        if n < 1:
            raise WorkloadDataError(f"n must be at least 1, got {n}")
        ratio = _optional_float(d, "ratio")
        ratio_ci = (
            None if d.get("ratio_ci95") is None else _interval(d, "ratio_ci95", "ratio", ratio)
        )
        wait = _optional_float(d, "wait_s")
        wait_ci = (
            None
            if d.get("wait_ci95") is None
            else _interval(d, "wait_ci95", "wait_s", wait, at_least=0.0)
        )
        calibration = _optional_float(d, "calibration_s")
        calibrated = (ratio, ratio_ci, wait, wait_ci, calibration)
        if any(v is None for v in calibrated) and any(v is not None for v in calibrated):
            raise WorkloadDataError(
                "timing needs ratio, ratio_ci95, wait_s, wait_ci95 and calibration_s "
                "together, or none of them"
            )
        if calibration is not None and not 0 < calibration < math.inf:
            raise WorkloadDataError(f"calibration_s must be a finite number > 0, got {calibration}")
        return cls(
            median_s=median,
            iqr_s=iqr,
            n=n,
            ci_low_s=low,
            ci_high_s=high,
            device=read_field(d, "device", str),
            source=read_field(d, "source", str),
            ratio=ratio,
            ratio_ci=ratio_ci,
            wait_s=wait,
            wait_ci=wait_ci,
            calibration_s=calibration,
            retimed=read_field(d, "retimed", int, optional=True) or 0,
            threads=read_field(d, "threads", int, optional=True),
        )


def _optional_float(d: Mapping[str, Any], name: str) -> float | None:
    value = read_field(d, name, float, int, optional=True)
    return None if value is None else float(value)


def _interval(
    d: Mapping[str, Any], name: str, of: str, value: float | None, at_least: float | None = None
) -> tuple[float, float]:
    """Field ``name``: the 95% interval of field ``of``, which holds ``value``; its low end
    above 0, or at ``at_least`` or above."""
    ci = read_field(d, name, list)
    if len(ci) != 2 or not all(isinstance(v, (int, float)) for v in ci):
        raise WorkloadDataError(f"{name} must be [low, high]")
    low, high = float(ci[0]), float(ci[1])
    if value is None:
        return low, high
    if not all(math.isfinite(v) for v in (low, high, value)):
        raise WorkloadDataError(f"{name} and {of} must be finite")
    if at_least is not None:
        if not at_least <= low <= value <= high:
            raise WorkloadDataError(f"timing needs {at_least:g} <= {name}[0] <= {of} <= {name}[1]")
    elif not 0 < low <= value <= high:
        raise WorkloadDataError(f"timing needs 0 < {name}[0] <= {of} <= {name}[1]")
    return low, high


#: How a timing or a FLOP count was obtained; "observed calls" (a timing) says why the workload
#: was not replayed where that has a reason, "not measured" always says why.
MethodKind = Literal["replayed", "observed calls", "off", "first call", "not measured"]
TIMING_KINDS: Final = ("replayed", "observed calls", "off", "not measured")
FLOPS_KINDS: Final = ("first call", "replayed", "not measured")
#: Why the plugin left a top-level workload unreplayed though a replay could have timed it:
#: beside other xdist workers, in an unmarked test, or with the session's timing budget spent.
LeftOut = Literal["xdist", "unmarked", "budget"]
LEFT_OUT: Final = ("xdist", "unmarked", "budget")


@dataclass(frozen=True)
class Method:
    """How one number was obtained: a kind, a free reason, and for a timing left out on
    purpose, by which policy (``left_out``). Rendered as a sentence only where it is shown."""

    kind: MethodKind
    reason: str | None = None
    left_out: LeftOut | None = None

    def __str__(self) -> str:
        if self.kind == "not measured":
            return f"not measured: {self.reason}"
        return self.kind if self.reason is None else f"{self.kind} ({self.reason})"


#: Timing by replaying the first call under its captured state, isolated from the program;
#: for FLOPs, counted on such a replay.
REPLAYED: Final = Method("replayed")
#: Timing from the calls the test made (submodules, or a root whose replay was not isolated).
OBSERVED: Final = Method("observed calls")
#: FLOPs counted on the test's own first call of the workload.
FIRST_CALL: Final = Method("first call")
#: Timing turned off for the session.
OFF: Final = Method("off")


def not_measured(reason: str, left_out: LeftOut | None = None) -> Method:
    return Method("not measured", reason, left_out)


def observed(why: str, left_out: LeftOut | None = None) -> Method:
    """Timing from the calls the test made, and why the workload was not replayed."""
    return Method("observed calls", why, left_out)


#: Timing left out because the session's timing budget was used up.
BUDGET_SPENT: Final = not_measured("the session's timing budget was spent", "budget")
#: Why a top-level workload was not replayed for timing: beside other xdist workers (the drift
#: gate relaxed) a replayed timing is biased, and could gate nothing.
XDIST_SHARED: Final = (
    "xdist workers share the cores: replays are left to a run in one process or to "
    "--workload-perf=strict"
)
#: Why a top-level workload was not replayed at all: its test did not ask for timing (no
#: marker, no ``workloads`` fixture), and replays would multiply an unedited suite's time.
UNMARKED: Final = "unmarked tests recorded by --workload-record=all are not replayed"


def _unreplayed(why: str, left_out: LeftOut) -> tuple[Method, Method]:
    """How a workload left unreplayed for ``why`` was timed: from the test's own calls, or not
    at all where none was observed."""
    unobserved = f"no call was observed untraced, and {why}"
    return observed(why, left_out), not_measured(unobserved, left_out)


XDIST_OBSERVED, XDIST_NOT_MEASURED = _unreplayed(XDIST_SHARED, "xdist")
UNMARKED_OBSERVED, UNMARKED_NOT_MEASURED = _unreplayed(UNMARKED, "unmarked")


def _check(method: Method, what: str, kinds: tuple[str, ...]) -> None:
    if method.kind not in kinds:
        raise WorkloadDataError(f"{what} {method.kind!r} is not one of {kinds}")
    if method.kind == "not measured" and not method.reason:
        raise WorkloadDataError(f"{what} 'not measured' needs a reason")
    if method.left_out is not None and method.left_out not in LEFT_OUT:
        raise WorkloadDataError(f"{what} left out {method.left_out!r} is not one of {LEFT_OUT}")


def _read_method(d: Mapping[str, Any], name: str) -> Method:
    left_out = read_field(d, f"{name}_left_out", str, optional=True) if name == "timing" else None
    return Method(
        read_field(d, name, str),  # (checked by Measured)
        read_field(d, f"{name}_reason", str, optional=True),
        left_out,
    )


@dataclass(frozen=True)
class Measured:
    """How a workload's ``timing`` and ``flops`` were obtained: ``timing`` is "replayed",
    "observed calls" (why it was not replayed, where that has a reason), "off" or "not
    measured" (why); ``flops`` is "first call", "replayed" or "not measured" (why)."""

    timing: Method
    flops: Method

    def __post_init__(self) -> None:
        _check(self.timing, "measured.timing", TIMING_KINDS)
        _check(self.flops, "measured.flops", FLOPS_KINDS)
        if self.flops.left_out is not None:
            raise WorkloadDataError("measured.flops is never left out")

    @property
    def unreplayed_for_xdist(self) -> bool:
        """Whether the timing was not replayed because xdist workers shared the cores: it is
        judged against no baseline, and the session counts it."""
        return self.timing.left_out == "xdist"

    @property
    def unreplayed(self) -> bool:
        """Whether the timing was left unreplayed on purpose (beside xdist workers, or in an
        unmarked test): a few of the test's own calls, judged against no baseline."""
        return self.timing.left_out in ("xdist", "unmarked")

    def to_dict(self) -> dict[str, Json]:
        return {
            "timing": self.timing.kind,
            "timing_reason": self.timing.reason,
            "timing_left_out": self.timing.left_out,
            "flops": self.flops.kind,
            "flops_reason": self.flops.reason,
        }

    @classmethod
    def from_dict(cls, data: object) -> Measured:
        d = read_object(data, "measured")
        return cls(timing=_read_method(d, "timing"), flops=_read_method(d, "flops"))
