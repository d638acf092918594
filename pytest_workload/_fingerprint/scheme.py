"""Fingerprint schemes. Each snapshot and report records the scheme it was written by: a change
to what enters a hash is a new scheme, so that a snapshot of another one is refused with one
line instead of failing on every hash.
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


CURRENT_SCHEME: Final = FingerprintScheme(version=FINGERPRINT_SCHEME, node=structure_node)
