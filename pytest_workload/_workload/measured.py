"""How a workload's timing and FLOPs were obtained, as stored in the JSON report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .._core.canonical import Json
from .._core.errors import WorkloadDataError
from .._core.fields import read_field, read_object

#: Timing by replaying the first call under its captured state, isolated from the program.
REPLAYED: Final = "replayed"
#: Timing from the calls the test made (submodules, or a root whose replay was not isolated).
OBSERVED: Final = "observed calls"
#: FLOPs counted on the test's own first call of the workload.
FIRST_CALL: Final = "first call"
#: Timing turned off for the session.
OFF: Final = "off"
#: The prefix of a reason something was not obtained.
NOT_MEASURED: Final = "not measured: "
#: Timing left out because the session's timing budget was used up.
BUDGET_SPENT: Final = NOT_MEASURED + "the session's timing budget was spent"
#: Why a top-level workload was not replayed for timing: beside other xdist workers (the drift
#: gate relaxed) a replayed timing is biased, and could gate nothing.
XDIST_SHARED: Final = (
    "xdist workers share the cores: replays are left to a run in one process or to "
    "--workload-perf=strict"
)


def not_measured(reason: str) -> str:
    return NOT_MEASURED + reason


def observed(why: str) -> str:
    """Timing from the calls the test made, and why the workload was not replayed."""
    return f"{OBSERVED} ({why})"


#: Why a top-level workload was not replayed at all: its test did not ask for timing (no
#: marker, no ``workloads`` fixture), and replays would multiply an unedited suite's time.
UNMARKED: Final = "unmarked tests recorded by --workload-record=all are not replayed"


def _unreplayed(why: str) -> tuple[str, str]:
    """How a workload left unreplayed for ``why`` was timed: from the test's own calls, or not
    at all where none was observed."""
    return observed(why), not_measured(f"no call was observed untraced, and {why}")


XDIST_OBSERVED, XDIST_NOT_MEASURED = _unreplayed(XDIST_SHARED)
UNMARKED_OBSERVED, UNMARKED_NOT_MEASURED = _unreplayed(UNMARKED)


def _check(value: str, what: str, allowed: tuple[str, ...]) -> str:
    """One of ``allowed``, possibly followed by " (why)", or "not measured: why"."""
    if value.split(" (", 1)[0] not in allowed and not value.startswith(NOT_MEASURED):
        raise WorkloadDataError(f"{what} {value!r} is not one of {allowed} nor {NOT_MEASURED}...")
    return value


@dataclass(frozen=True)
class Measured:
    """``timing``: "replayed", "observed calls (<why not replayed>)", "off" or
    "not measured: <why>";
    ``flops``: "first call", "replayed" or "not measured: <why>"."""

    timing: str
    flops: str

    def __post_init__(self) -> None:
        _check(self.timing, "measured.timing", (REPLAYED, OBSERVED, OFF))
        _check(self.flops, "measured.flops", (FIRST_CALL, REPLAYED))

    @property
    def unreplayed_for_xdist(self) -> bool:
        """Whether the timing was not replayed because xdist workers shared the cores: it is
        judged against no baseline, and the session counts it."""
        return self.timing in (XDIST_OBSERVED, XDIST_NOT_MEASURED)

    @property
    def unreplayed(self) -> bool:
        """Whether the timing was left unreplayed on purpose (beside xdist workers, or in an
        unmarked test): a few of the test's own calls, judged against no baseline."""
        return self.unreplayed_for_xdist or self.timing in (
            UNMARKED_OBSERVED,
            UNMARKED_NOT_MEASURED,
        )

    def to_dict(self) -> dict[str, Json]:
        return {"timing": self.timing, "flops": self.flops}

    @classmethod
    def from_dict(cls, data: object) -> Measured:
        d = read_object(data, "measured")
        return cls(timing=read_field(d, "timing", str), flops=read_field(d, "flops", str))
