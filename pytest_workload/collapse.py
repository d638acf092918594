"""Collapse detection: distinct workloads that ended up under one key.

The same index serves every key: the built-in workload hash (identity = structure hash plus
input signature) and, later, keys users compute themselves. Sightings accumulate over the whole
session, so a collapse between two tests is caught as well as one inside a test.
"""

from __future__ import annotations

from dataclasses import dataclass

from .canonical import canonical_json
from .data import Workload


@dataclass(frozen=True)
class Sighting:
    """A workload as seen in one test."""

    nodeid: str
    workload: Workload


@dataclass(frozen=True)
class Collapse:
    """Two distinct workloads that share ``key``."""

    key: str
    first: Sighting
    second: Sighting


def builtin_identity(workload: Workload) -> str:
    """What the workload hash is meant to be a function of."""
    return canonical_json([workload.structure_hash, workload.input_signature.to_dict()])


class CollapseIndex:
    """Remembers, per key, every distinct identity seen under it and where."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, Sighting]] = {}

    def add(self, key: str, identity: str, sighting: Sighting) -> list[Collapse]:
        """Record a sighting; return a collapse for each earlier distinct identity it hits.

        A pair is reported once: only the first sighting of a new identity can collapse.
        """
        identities = self._seen.setdefault(key, {})
        if identity in identities:
            return []
        collapses = [Collapse(key, earlier, sighting) for earlier in identities.values()]
        identities[identity] = sighting
        return collapses

    def add_workloads(self, nodeid: str, workloads: tuple[Workload, ...]) -> list[Collapse]:
        """Check a test's workloads by their built-in hash."""
        found: list[Collapse] = []
        for w in workloads:
            found += self.add(w.hash, builtin_identity(w), Sighting(nodeid, w))
        return found
