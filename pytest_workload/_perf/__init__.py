"""The performance gate, whole: replaying a recorded call to time it (first call, isolation,
replay, stopwatch, device, orchestrate), the baselines, the drift verdict, the gate and its
texts.

Other features import only what is named here.
"""

from .compile_ready import check_compile
from .drift import DEFAULT_TOLERANCE, Drift, judge
from .first_call import FirstCall, mismatch, trained_as
from .orchestrate import RecordedCall, Replays, SessionBudget, measure_calls
from .replay import Measurement, device_of
from .statistics import summarize
from .stopwatch import TimingPolicy

__all__ = [
    "DEFAULT_TOLERANCE",
    "Drift",
    "FirstCall",
    "Measurement",
    "RecordedCall",
    "Replays",
    "SessionBudget",
    "TimingPolicy",
    "check_compile",
    "device_of",
    "judge",
    "measure_calls",
    "mismatch",
    "summarize",
    "trained_as",
]
