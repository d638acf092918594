"""The one canonical serialisation that every hash in pytest-workload is taken over."""

from __future__ import annotations

import hashlib
import json
from typing import TypeAlias


def canonical_json(value: object) -> str:
    """Compact JSON with sorted keys and no NaN: the same bytes in every process and machine."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


Json: TypeAlias = "bool | int | float | str | list[Json] | dict[str, Json] | None"
