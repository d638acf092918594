"""Collapses (distinct workloads under one key) and unstable keys (one workload under several),
found by one index over the whole session (docs/how-to/cache-keys.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .._core.strict_json import Json, canonical_json
from .._core.text import one_line, prefix_length, short
from .._snapshot import format_key
from .._workload.workload import TestWorkloads, UserKey, Workload

FindingKind = Literal["hash collapse", "user key collapse", "unstable user key"]


@dataclass(frozen=True)
class Sighting:
    nodeid: str
    workload: Workload
    user_key: UserKey | None = None


@dataclass(frozen=True)
class Collapse:
    kind: FindingKind
    first: Sighting
    second: Sighting


class KeyChecks:
    """Each test is checked once, against every test checked before it: as it runs, so that it
    can fail, or once every test is in, for a test that failed or that an xdist worker sent."""

    def __init__(self) -> None:
        #: Per kind of finding and key, every distinct identity seen under the key and where.
        self._seen: dict[FindingKind, dict[str, dict[str, Sighting]]] = {}
        self.found: list[Collapse] = []
        self._waiting: dict[str, None] = {}
        #: Which xdist worker's payload (counted from 1) sent each test.
        self._sender: dict[str, int] = {}

    def check(self, test: TestWorkloads) -> list[Collapse]:
        self._waiting.pop(test.nodeid, None)
        found: list[Collapse] = []

        def see(kind: FindingKind, key: str, identity: str, seen: Sighting) -> None:
            # each new identity is reported once, against the first one seen under the key
            identities = self._seen.setdefault(kind, {}).setdefault(key, {})
            if identity not in identities:
                if identities:
                    found.append(Collapse(kind, next(iter(identities.values())), seen))
                identities[identity] = seen

        for w in test:
            seen = Sighting(test.nodeid, w)
            # what the workload hash is meant to be a function of
            see("hash collapse", w.hash, f"{w.structure_hash}:{w.input_signature.canonical}", seen)
            for user_key in w.user_keys:
                keyed = Sighting(test.nodeid, w, user_key)
                key = canonical_json(user_key.key)
                see("user key collapse", key, w.hash, keyed)
                see("unstable user key", w.hash, key, keyed)
        self.found += found
        return found

    def wait(self, nodeids: Iterable[str], *, sent: bool = False) -> None:
        """Leave tests to ``check_waiting``; ``sent``: those of one worker's payload."""
        sender = max(self._sender.values(), default=0) + 1
        for nodeid in nodeids:
            self._waiting[nodeid] = None
            if sent:
                self._sender[nodeid] = sender

    def check_waiting(self, tests: Iterable[TestWorkloads]) -> list[str]:
        """Check those of ``tests`` that waited, in that order; say the collapses between two
        payloads' tests, of which no worker saw both."""
        waited = [t for t in tests if t.nodeid in self._waiting]
        self._waiting.clear()
        return [
            render_collapse(c)
            for test in waited
            for c in self.check(test)
            if self._sender.get(c.first.nodeid) != self._sender.get(c.second.nodeid)
        ]


def _describe(w: Workload) -> str:
    return one_line(f"{w.label} ({w.class_name}), input {w.input}")


def _key(key: Json) -> str:
    return one_line(format_key(key))


def render_collapse(collapse: Collapse) -> str:
    a, b = collapse.first, collapse.second
    if collapse.kind == "unstable user key":
        assert a.user_key is not None and b.user_key is not None
        return "\n".join(
            [
                "unstable user key: one workload got different keys from pytest_workload_key:",
                f"  workload: {_describe(a.workload)}, hash {short(a.workload.hash)}",
                f"  - {one_line(a.nodeid)}, call {a.user_key.first_call}: {_key(a.user_key.key)}",
                f"  - {one_line(b.nodeid)}, call {b.user_key.first_call}: {_key(b.user_key.key)}",
            ]
        )
    if collapse.kind == "user key collapse":
        assert a.user_key is not None
        head = f"user key collapse: two distinct workloads share the key {_key(a.user_key.key)}"
        what, hashes = "hash", [a.workload.hash, b.workload.hash]
    else:
        head = f"workload hash collapse: two distinct workloads share the hash {a.workload.hash}"
        what, hashes = "structure", [a.workload.structure_hash, b.workload.structure_hash]
    n = prefix_length(hashes)
    rows = [
        f"  - {one_line(s.nodeid)}: {_describe(s.workload)}, {what} {short(h, n)}"
        for s, h in zip((a, b), hashes, strict=True)
    ]
    return "\n".join([head, *rows])
