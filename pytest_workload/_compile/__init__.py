"""Compile health: what dynamo did with a module the test compiled itself (graphs, graph
breaks, recompiles), observed during the recorded calls and gated with the snapshot."""

from .health import CompileHealth, GraphBreak, Recompile, health_agrees, health_lines, merge_health
from .observe import CallObservation, CompileWatch

__all__ = [
    "CallObservation",
    "CompileHealth",
    "CompileWatch",
    "GraphBreak",
    "Recompile",
    "health_agrees",
    "health_lines",
    "merge_health",
]
