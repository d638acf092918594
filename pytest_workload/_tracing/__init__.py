"""What a call computes, traced: operations, FLOPs, bytes moved, peak device memory,
what follows the data. The recorder traces roots with it; a replay counts FLOPs with it.

Other features import only what is named here.
"""

from .cost_count import DevicePeak, FlopCount, counting, device_memory, own_tensors
from .tracer import Trace, count_flops, tracing

__all__ = [
    "DevicePeak",
    "FlopCount",
    "Trace",
    "count_flops",
    "counting",
    "device_memory",
    "own_tensors",
    "tracing",
]
