"""The record every feature reads: a workload (signature, module table, paths, computation,
costs, how it was measured, its timing) and a test's workloads. Imports only the core; no torch."""
