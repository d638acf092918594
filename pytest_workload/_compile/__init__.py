"""Compile health: what dynamo did with a module the test compiled itself (graphs, graph
breaks, recompiles), observed during the recorded calls and gated with the snapshot; and
compile readiness, the same figures for an eager model compiled on request in a forked child."""

from .health import CompileHealth, health_changes, merge_health
from .observe import (
    BACKENDS,
    CallObservation,
    CompileWatch,
    Readiness,
    ReadyCall,
    check_readiness,
    readiness_changes,
)

__all__ = [
    "BACKENDS",
    "CallObservation",
    "CompileHealth",
    "CompileWatch",
    "Readiness",
    "ReadyCall",
    "check_readiness",
    "health_changes",
    "merge_health",
    "readiness_changes",
]
