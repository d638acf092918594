"""The performance gate, whole: replaying a recorded call to time it, the baselines, the
drift verdict, the gate and its texts. Other features import only what is named here."""

from .baseline import DEFAULT_TOLERANCE, Drift, judge
from .device import PeakMemory, device_for, device_of
from .first_call import FirstCall, check_compile, mismatch, trained_as
from .orchestrate import Replays, SessionBudget, measure_calls
from .stopwatch import TimingPolicy, summarize

__all__ = [
    "DEFAULT_TOLERANCE",
    "Drift",
    "FirstCall",
    "PeakMemory",
    "Replays",
    "SessionBudget",
    "TimingPolicy",
    "check_compile",
    "device_for",
    "device_of",
    "judge",
    "measure_calls",
    "mismatch",
    "summarize",
    "trained_as",
]
