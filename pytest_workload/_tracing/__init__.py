"""What a call computes, traced: operations, FLOPs, bytes moved, peak memory, what follows
the data. Other features import only what is named here."""

from .cost_count import FlopCount, counting, own_tensors
from .tracer import Trace, count_flops, tracing

__all__ = ["FlopCount", "Trace", "count_flops", "counting", "own_tensors", "tracing"]
