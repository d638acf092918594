"""Workload distance factor: can a schedule tuned for one workload serve another
(:func:`distance_factor`)? Unlike the original rules, containers keep their boundaries,
``bool`` is a value rather than an integer, and nothing raises."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeGuard, TypeVar

from .._core.strict_json import Json, canonical_json
from .._workload.signature import SHAPED_TAGS, is_tensor_node

K = TypeVar("K", bound=Json)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _serialisable(key: Json) -> bool:
    """Whether a key has canonical JSON, as every recorded key had (its hash is taken over it):
    NaN, a cycle or nesting past the recursion limit means it was never a workload's key."""
    try:
        canonical_json(key)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _tensor_ratio(
    target: dict[str, Json], candidate: dict[str, Json], pending: list[tuple[Json, Json]]
) -> int | None:
    """Equal but for the shapes, which have one rank and concrete non-negative dimensions
    (queued on ``pending``, each one to divide)."""
    if target.keys() != candidate.keys():
        return None
    tags = [tag for tag in SHAPED_TAGS if tag in target]  # (one, unless malformed)
    t, c = (target[tags[0]], candidate[tags[0]]) if len(tags) == 1 else (None, None)
    if not isinstance(t, list) or not isinstance(c, list) or len(t) != len(c):
        return None
    rest = (k for k in target if k not in SHAPED_TAGS)
    if any(canonical_json(target[k]) != canonical_json(candidate[k]) for k in rest):
        return None
    if not all(_is_int(d) and d >= 0 for d in (*t, *c)):
        return None
    pending += zip(t, c, strict=True)
    return 1


def _step(target: Json, candidate: Json, pending: list[tuple[Json, Json]]) -> int | None:
    """One pair's own factor; a container's children are queued on ``pending`` instead."""
    if is_tensor_node(target) and is_tensor_node(candidate):
        return _tensor_ratio(target, candidate, pending)  # type: ignore[arg-type]
    if _is_int(target) and _is_int(candidate):
        if target > 0 and candidate > 0 and target % candidate == 0:
            return target // candidate
        return 1 if target == candidate else None
    if isinstance(target, list) and isinstance(candidate, list):
        if len(target) != len(candidate):
            return None
        pending += zip(target, candidate, strict=True)
        return 1
    if isinstance(target, dict) and isinstance(candidate, dict):
        if target.keys() != candidate.keys():
            return None
        pending += ((target[k], candidate[k]) for k in target)
        return 1
    return 1 if type(target) is type(candidate) and target == candidate else None


def distance_factor(target_key: Json, candidate_key: Json) -> float:
    """How far ``candidate_key``'s workload is from ``target_key``'s: 1 identical, inf unusable.

    Use it to decide whether an artifact made for one workload (a tuned schedule, a compiled
    kernel) can serve another of the same structure at a larger shape.

    Example:
        A batch-8 224x224 target against a batch-1 112x112 candidate of one structure:

        >>> def key(*shape):
        ...     return ["3f9a...", [{"tensor": list(shape), "dtype": "float32"}], {}]
        >>> distance_factor(key(8, 3, 224, 224), key(1, 3, 112, 112))
        32.0
        >>> distance_factor(key(1, 3, 112, 112), key(8, 3, 224, 224))
        inf

    The rules (compatible keys, the product of target over candidate, what gives ``inf``) are
    docs/reference/api.md's "Distance factor".

    Args:
        target_key: The key of the workload to serve, ``[structure_hash, args, kwargs]``
            exactly as ``Workload.key`` and the JSON report's ``key`` field hold it.
        candidate_key: The key of the workload whose artifact might serve it.

    Returns:
        The factor, ``1.0`` for identical keys, ``inf`` where the rules say so (it never
        raises).
    """
    if not (
        isinstance(target_key, list)
        and isinstance(candidate_key, list)
        and target_key
        and candidate_key
        and isinstance(target_key[0], str)
        and target_key[0] == candidate_key[0]
        and _serialisable(target_key)
        and _serialisable(candidate_key)
    ):
        return math.inf
    # the product of target over candidate of every integer, walked with a stack, not
    # recursion: a key nested past the recursion limit may still have canonical JSON (in C)
    factor = 1
    pending: list[tuple[Json, Json]] = [(target_key[1:], candidate_key[1:])]
    while pending:
        ratio = _step(*pending.pop(), pending)
        if ratio is None:
            return math.inf
        factor *= ratio
    try:
        return float(factor)
    except OverflowError:
        return math.inf


def nearest(target_key: Json, candidates: Iterable[K]) -> tuple[K, float] | None:
    """The candidate closest to ``target_key`` by ``distance_factor``, and its factor.

    Example:
        >>> def key(batch):
        ...     return ["3f9a...", [{"tensor": [batch, 16], "dtype": "float32"}], {}]
        >>> nearest(key(8), [key(1), key(2), key(3)])
        (['3f9a...', [{'tensor': [2, 16], 'dtype': 'float32'}], {}], 4.0)
        >>> nearest(key(8), [key(3)]) is None
        True

    Args:
        target_key: The key of the workload to serve, as for ``distance_factor``.
        candidates: The keys available (any iterable, read once).

    Returns:
        ``(candidate, factor)`` for the candidate with the smallest finite factor (ties broken
        by the smallest canonical JSON), or None when no candidate is compatible.
    """
    factors = ((distance_factor(target_key, c), c) for c in candidates)
    usable = ((f, canonical_json(c), c) for f, c in factors if not math.isinf(f))
    best = min(usable, key=lambda ranked: ranked[:2], default=None)
    return None if best is None else (best[2], best[0])
