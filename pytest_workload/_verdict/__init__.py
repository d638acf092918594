"""Verdicts over recorded data: snapshot diffs, distance factors, collapses, drift,
report comparison. Pure functions of the data; no files, no pytest."""
