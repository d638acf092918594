"""Compile health: what dynamo did with a module the test compiled itself (graphs, graph
breaks, recompiles), observed during the recorded calls and gated with the snapshot; and
compile readiness, the same figures for an eager model compiled on request in a forked child."""
