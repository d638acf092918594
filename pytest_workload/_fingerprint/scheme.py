"""Fingerprint schemes, workload keys and workload hashes.

A workload is one module structure called with one input signature. Its *key* keeps the two
apart, ``[structure_hash, args, kwargs]``, so tools can see that two workloads are the same
computation at another shape; its *hash* is SHA-256 over the canonical serialisation of
``(scheme version, structure hash, input signature)``.

The scheme is versioned, and each snapshot and report records the version it was written by: a
change to what enters a hash is a new scheme, so that a snapshot of another one is refused with
one line instead of failing on every hash.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from .._core.files import FINGERPRINT_SCHEME
from .._core.strict_json import Json, canonical_json, sha256_hex
from .._workload.signature import InputSignature
from .structure import NodeFunction, StructureMemo, structure_hash, structure_node

if TYPE_CHECKING:
    from torch import nn


@dataclass(frozen=True)
class FingerprintScheme:
    """One version of the rules that turn (module, inputs) into hashes."""

    version: int
    node: NodeFunction

    def structure_hash(
        self,
        module: nn.Module,
        memo: StructureMemo | None = None,
        descriptions: MutableMapping[str, dict[str, Json]] | None = None,
    ) -> str:
        return structure_hash(module, memo, self.node, descriptions)

    def workload_hash(self, structure: str, signature: InputSignature) -> str:
        return sha256_hex(canonical_json([self.version, structure, signature.to_dict()]))


#: What this release hashes: what survives a library release that only rewords (see
#: :mod:`.structure`).
CURRENT_SCHEME: Final = FingerprintScheme(version=FINGERPRINT_SCHEME, node=structure_node)
