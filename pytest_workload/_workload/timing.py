"""A timing as data: median, spread and a 95% interval of per-call times, the workload's
compute relative to the calibration kernel timed beside it and its waits; and how a workload's
timing and FLOPs were obtained (:class:`Measured`), as stored in the JSON report."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

from .._core.codec import Record, Spec, codec
from .._core.errors import WorkloadDataError
from .._core.strict_json import Json, read_field

#: Samples (for a replay: workload/calibration pairs) a timing needs to be judged against
#: another or to become a baseline (why six: docs/explanation/timing.md, "How the gate decides").
MIN_SAMPLES: Final = 6


@dataclass(frozen=True)
class Timing(Record):
    """Per-call time of one workload, as ``Workload.timing`` holds it.

    Example:
        ``median_s=0.00324, ci_s=(0.00316, 0.00332), n=66`` reads "3.24 ms a call,
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
        ci_s: The median's 95% confidence interval, ``(low, high)``, in seconds.
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
    n: int = field(metadata=codec(minimum=1))
    ci_s: tuple[float, float] = field(metadata=codec(key="ci95_s"))
    device: str
    source: str = "replay"
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = field(default=None, metadata=codec(key="ratio_ci95"))
    wait_s: float | None = None
    wait_ci: tuple[float, float] | None = field(default=None, metadata=codec(key="wait_ci95"))
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

    def check(self) -> None:
        """Each interval holds its median, and a calibration comes whole or not at all."""
        _interval(self.ci_s, "ci95_s", self.median_s, "median_s", "<")
        if not 0 <= self.iqr_s < math.inf:
            raise WorkloadDataError(f"iqr_s must be a finite number >= 0, got {self.iqr_s}")
        calibrated = (self.ratio, self.ratio_ci, self.wait_s, self.wait_ci, self.calibration_s)
        if any(v is None for v in calibrated) and any(v is not None for v in calibrated):
            raise WorkloadDataError(
                "timing needs ratio, ratio_ci95, wait_s, wait_ci95 and calibration_s "
                "together, or none of them"
            )
        calibration = self.calibration_s
        if calibration is not None and not 0 < calibration < math.inf:
            raise WorkloadDataError(f"calibration_s must be a finite number > 0, got {calibration}")
        if self.ratio_ci is not None and self.ratio is not None:
            _interval(self.ratio_ci, "ratio_ci95", self.ratio, "ratio", "<")
        if self.wait_ci is not None and self.wait_s is not None:
            _interval(self.wait_ci, "wait_ci95", self.wait_s, "wait_s", "<=")


def _interval(
    ci: tuple[float, float], name: str, value: float, of: str, low_end: Literal["<", "<="]
) -> None:
    """``ci``, field ``name``, is the 95% interval of ``value``, field ``of``, its low end
    above 0 (``low_end`` ``<``) or at 0 or above (``<=``)."""
    low, high = ci
    if not all(math.isfinite(v) for v in (low, high, value)):
        raise WorkloadDataError(f"{name} and {of} must be finite")
    if not (low > 0 if low_end == "<" else low >= 0) or not low <= value <= high:
        raise WorkloadDataError(f"timing needs 0 {low_end} {name}[0] <= {of} <= {name}[1]")


#: How a timing or a FLOP count was obtained, and which policy left a top-level workload
#: unreplayed on purpose: docs/reference/json-report.md, ``measured``.
MethodKind = Literal["replayed", "observed calls", "off", "first call", "not measured"]
TIMING_KINDS: Final = ("replayed", "observed calls", "off", "not measured")
FLOPS_KINDS: Final = ("first call", "replayed", "not measured")
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


def _flat(name: str) -> dict[str, Spec]:
    """A method written into ``measured`` as ``<name>``, ``<name>_reason`` and, for the timing,
    ``timing_left_out``."""

    def write(method: Method) -> Json:
        out: dict[str, Json] = {name: method.kind, f"{name}_reason": method.reason}
        if name == "timing":
            out["timing_left_out"] = method.left_out
        return out

    def read(d: Mapping[str, Any]) -> Method:
        timing = name == "timing"
        left_out = read_field(d, "timing_left_out", str, optional=True) if timing else None
        kind = read_field(d, name, str)  # (checked by Measured)
        return Method(kind, read_field(d, f"{name}_reason", str, optional=True), left_out)

    return codec(flatten=True, write=write, read=read)


@dataclass(frozen=True)
class Measured(Record):
    """How a workload's ``timing`` and ``flops`` were obtained (docs/reference/json-report.md,
    ``measured``). A measurement in progress also carries the numbers it obtained, which the
    workload then keeps as its ``timing``, ``flops`` and ``peak_memory_bytes`` (a workload's own
    ``measured`` has none of them): they are never stored here, nor compared."""

    timing: Method = field(metadata=_flat("timing"))
    flops: Method = field(metadata=_flat("flops"))
    timed: Timing | None = field(default=None, compare=False, metadata=codec(skip=True))
    counted: int | None = field(default=None, compare=False, metadata=codec(skip=True))
    peak_memory_bytes: int | None = field(default=None, compare=False, metadata=codec(skip=True))
    #: why a replay found nothing (None: it ran)
    problem: str | None = field(default=None, compare=False, metadata=codec(skip=True))

    what: ClassVar[str] = "measured"

    def __post_init__(self) -> None:
        _check(self.timing, "measured.timing", TIMING_KINDS)
        _check(self.flops, "measured.flops", FLOPS_KINDS)
        if self.flops.left_out is not None:
            raise WorkloadDataError("measured.flops is never left out")

    @property
    def unreplayed(self) -> bool:
        """Whether the timing was left unreplayed on purpose (beside xdist workers, or in an
        unmarked test): a few of the test's own calls, judged against no baseline."""
        return self.timing.left_out in ("xdist", "unmarked")
