"""Collapse and instability: the two ways a workload key goes wrong.

A *collapse* is distinct workloads under one key (a weight-based key that forgets the input
shape); an *unstable* key is one workload under several keys (a key that changes when the
weights are re-initialised). The same index finds both: a collapse is several identities under
one key, instability is several keys under one identity. Sightings accumulate over the whole
session, so problems between two tests are caught as well as those inside one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .._core.strict_json import canonical_json
from .._workload.workload import TestWorkloads, UserKey, Workload

FindingKind = Literal["hash collapse", "user key collapse", "unstable user key"]


@dataclass(frozen=True)
class Sighting:
    """A workload as seen in one test (with the user key it got there, if any)."""

    nodeid: str
    workload: Workload
    user_key: UserKey | None = None


@dataclass(frozen=True)
class Collapse:
    """Two sightings that should have been one key (or two keys that should have been one)."""

    kind: FindingKind
    first: Sighting
    second: Sighting


class CollapseIndex:
    """Remembers, per key, every distinct identity seen under it and where."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, Sighting]] = {}

    def add(self, key: str, identity: str, sighting: Sighting) -> Sighting | None:
        """Record a sighting; return the first sighting under ``key`` if its identity differs.

        Each new identity is reported once, against the first one seen under the key.
        """
        identities = self._seen.setdefault(key, {})
        if identity in identities:
            return None
        first = next(iter(identities.values()), None)
        identities[identity] = sighting
        return first


def builtin_identity(workload: Workload) -> str:
    """What the workload hash is meant to be a function of."""
    return f"{workload.structure_hash}:{workload.input_signature.canonical}"


class KeyChecks:
    """Session-wide collapse checks for the built-in hash and for user keys."""

    def __init__(self) -> None:
        self._by_hash = CollapseIndex()
        self._by_user_key = CollapseIndex()
        self._keys_of_workload = CollapseIndex()

    def check(self, test: TestWorkloads) -> list[Collapse]:
        found: list[Collapse] = []

        def note(kind: FindingKind, first: Sighting | None, second: Sighting) -> None:
            if first is not None:
                found.append(Collapse(kind, first, second))

        for w in test:
            seen = Sighting(test.nodeid, w)
            note("hash collapse", self._by_hash.add(w.hash, builtin_identity(w), seen), seen)
            for user_key in w.user_keys:
                keyed = Sighting(test.nodeid, w, user_key)
                key = canonical_json(user_key.key)
                note("user key collapse", self._by_user_key.add(key, w.hash, keyed), keyed)
                note("unstable user key", self._keys_of_workload.add(w.hash, key, keyed), keyed)
        return found
