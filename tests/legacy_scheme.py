"""A small older fingerprint scheme, kept to test migrations between schemes.

Scheme 0 is scheme 1 without plain attributes in the structure, and with its own version in
every workload hash: enough to change every hash while keeping the same workloads apart.
"""

from __future__ import annotations

from pytest_workload._fingerprint.scheme import FingerprintScheme
from pytest_workload._fingerprint.structure import structure_node


def _node_without_attributes(module, children):
    node = structure_node(module, children, scheme=1)
    del node["attributes"]
    return node


LEGACY_SCHEME = FingerprintScheme(version=0, node=_node_without_attributes)
