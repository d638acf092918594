"""Fingerprint schemes, workload keys and workload hashes.

A workload is one module structure called with one input signature. Its *key* keeps the two
apart, ``[structure_hash, args, kwargs]``, so tools can see that two workloads are the same
computation at another shape; its *hash* is SHA-256 over the canonical serialisation of
``(scheme version, structure hash, input signature)``.

The scheme is versioned: a change to what enters a hash is a new scheme, and snapshots written
by an older one are migrated, never silently re-keyed.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
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


#: Scheme 1: the class by its module path, ``extra_repr()`` and every plain public attribute.
SCHEME_1: Final = FingerprintScheme(version=1, node=partial(structure_node, scheme=1))

#: Scheme 2: what survives a library release that only rewords (see :mod:`.structure`).
CURRENT_SCHEME: Final = FingerprintScheme(version=FINGERPRINT_SCHEME, node=structure_node)

#: Schemes this release can compute, by version: the current one and those kept to migrate from.
BUILTIN_SCHEMES: Final[Mapping[int, FingerprintScheme]] = MappingProxyType(
    {s.version: s for s in (SCHEME_1, CURRENT_SCHEME)}
)
