"""Option values, parsed one way for pytest's options, ini keys and the ``compare`` command."""

from __future__ import annotations

import argparse


def number(value: str, *, positive: bool) -> float:
    """A float ``> 0`` (``positive``) or ``>= 0``; NaN and other text are rejected."""
    try:
        parsed = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not (parsed > 0 if positive else parsed >= 0):
        bound = "> 0" if positive else ">= 0"
        raise argparse.ArgumentTypeError(f"expected a number {bound}, got {value!r}")
    return parsed


def tolerance(value: str) -> float:
    """A slowdown fraction: ``0.2`` allows 20%."""
    return number(value, positive=False)
