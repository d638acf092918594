"""Fingerprint schemes. Each snapshot and report records the scheme it was written by: a change
to what enters a hash is a new scheme, so that a snapshot of another one is refused with one
line instead of failing on every hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .._core.files import FINGERPRINT_SCHEME
from .._core.strict_json import canonical_json, sha256_hex
from .._workload.signature import InputSignature


@dataclass(frozen=True)
class FingerprintScheme:
    """One version of the rules that turn a structure hash and inputs into a workload hash
    (the structure hash itself: :func:`.structure_hash`)."""

    version: int

    def workload_hash(self, structure: str, signature: InputSignature) -> str:
        return sha256_hex(canonical_json([self.version, structure, signature.to_dict()]))


CURRENT_SCHEME: Final = FingerprintScheme(version=FINGERPRINT_SCHEME)
