"""Measuring workloads: timing on their device, the device itself, replays."""
