"""Short hashes for people: the one place that decides how many hex digits are shown.

Storage always keeps full hashes; every message and report shortens them here.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Final

#: Characters of a hash shown in reports and messages; storage always keeps the full hash.
SHORT_HASH_LENGTH: Final = 8


def prefix_length(hashes: Iterable[str], minimum: int = SHORT_HASH_LENGTH) -> int:
    """Shortest displayed prefix (at least ``minimum``) that tells all distinct hashes apart."""
    distinct = sorted(set(hashes))
    length = minimum
    for a, b in itertools.pairwise(distinct):
        common = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        length = max(length, common + 1)
    return length


def short(full: str, length: int = SHORT_HASH_LENGTH) -> str:
    """The first ``length`` hex digits of a hash, as messages show it."""
    return full[:length]
