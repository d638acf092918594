"""The performance gate, whole: replaying a recorded call to time it (stopwatch, budget,
calibration, device, isolation), the baselines (record and store), the drift verdict, the
gate and its failure and progress texts.

Other features import only what is named here.
"""

from .budget import SessionBudget
from .context import mismatch, trained_as
from .drift import DEFAULT_TOLERANCE, Drift, judge
from .first_call import FirstCall
from .orchestrate import RecordedCall, Replays, measure_calls
from .replay import Measurement, device_of
from .stopwatch import TimingPolicy, summarize

__all__ = [
    "DEFAULT_TOLERANCE",
    "Drift",
    "FirstCall",
    "Measurement",
    "RecordedCall",
    "Replays",
    "SessionBudget",
    "TimingPolicy",
    "device_of",
    "judge",
    "measure_calls",
    "mismatch",
    "summarize",
    "trained_as",
]
