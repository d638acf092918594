"""Module descriptions: what one module contributed to its structure hash (its
:func:`description_hash`), stored once per distinct description in a table keyed by that hash
(docs/reference/snapshot-files.md), so a diff can walk two trees below the recorded depth.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from .._core.errors import WorkloadDataError
from .._core.strict_json import Json, canonical_json, sha256_hex

#: A table of descriptions by structure hash.
ModuleTable = Mapping[str, Mapping[str, Json]]

#: Keys of a module description that explain a hash but never enter it (the class's module
#: path: libraries move classes between modules).
DESCRIPTION_ONLY: Final = frozenset({"class_path"})


def description_hash(description: Mapping[str, Json]) -> str:
    """The structure hash of a module with this description: every key but those in
    :data:`DESCRIPTION_ONLY`. Modules that differ only there share a hash and one entry."""
    return sha256_hex(
        canonical_json({k: v for k, v in description.items() if k not in DESCRIPTION_ONLY})
    )


def hash_without_dtypes(table: ModuleTable, structure_hash: str, memo: dict[str, str]) -> str:
    """The structure hash of the tree with this hash, its parameter and buffer dtypes left out,
    from the tree's descriptions in ``table`` (each distinct one once: ``memo`` maps hashes to
    theirs, and never goes stale). Two trees that agree on it, and not on their structure
    hashes, differ in those dtypes and in nothing else."""
    found = memo.get(structure_hash)
    if found is not None:
        return found
    description = table[structure_hash]
    stripped = dict(description)
    for key in ("parameters", "buffers"):
        entries = description.get(key)
        if isinstance(entries, list):  # ([name, shape, dtype], or [name, None] for no tensor)
            stripped[key] = [e[:2] if isinstance(e, list) and len(e) == 3 else e for e in entries]
    children = description.get("children")
    if isinstance(children, list):
        stripped["children"] = [
            [link[0], hash_without_dtypes(table, link[1], memo)]
            if isinstance(link, list) and len(link) == 2 and isinstance(link[1], str)
            else link
            for link in children
        ]
    memo[structure_hash] = found = description_hash(stripped)
    return found


def top_packages(table: ModuleTable) -> set[str]:
    """The top-level packages of the classes the descriptions name (where library versions
    come from)."""
    paths = (d.get("class_path") for d in table.values())
    return {p.partition(".")[0] for p in paths if isinstance(p, str)}


def child_links(description: Mapping[str, Json]) -> Iterator[tuple[str, str]]:
    """``(name, structure hash)`` of the children a description names (None ones left out)."""
    children = description.get("children")
    for link in children if isinstance(children, list) else ():
        if isinstance(link, list) and len(link) == 2 and isinstance(link[1], str):
            yield str(link[0]), link[1]


def closure(table: ModuleTable, roots: Iterable[str]) -> dict[str, Mapping[str, Json]]:
    """The descriptions reachable from ``roots`` (those the table has), sorted by hash."""
    found: dict[str, Mapping[str, Json]] = {}
    todo = list(roots)
    while todo:
        key = todo.pop()
        if key in found or key not in table:
            continue
        found[key] = table[key]
        todo.extend(h for _, h in child_links(table[key]))
    return dict(sorted(found.items()))


def modules_to_dict(table: ModuleTable) -> dict[str, Json]:
    return {k: dict(table[k]) for k in sorted(table)}


def read_modules(data: object) -> dict[str, Mapping[str, Json]]:
    """A stored table back; every key must be its description's hash and every child it
    names must be in the table."""
    if not isinstance(data, dict):
        raise WorkloadDataError("field 'modules' must be an object")
    for key, description in data.items():
        where = f"module description {key[:16]!r}"
        if not isinstance(description, dict):
            raise WorkloadDataError(f"{where} is not an object")
        if description_hash(description) != key:
            raise WorkloadDataError(f"{where} does not hash to its key (edited by hand?)")
        for name, child in child_links(description):
            if child not in data:
                raise WorkloadDataError(f"{where}: child {name!r} has no stored description")
    return dict(sorted(data.items()))
