"""A workload snapshot file on disk: its injective name, what it holds before it is compared
(too new to read, corrupt, or edited by hand so that a hash no longer matches what it claims to
hash), and whether it may stay as it is. Nothing here writes it; no syrupy here."""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .._core.errors import CorruptFileError, OldFormatError, WorkloadDataError
from .._core.files import SNAPSHOT_FORMAT, SNAPSHOT_FORMAT_KEY, read_text
from .._core.strict_json import load_json
from .._core.text import short
from .._fingerprint.scheme import BUILTIN_SCHEMES
from .cost_diff import shrunk
from .diff import documents_match
from .document import SnapshotDocument

#: Where workload snapshots live, beside each test module: not syrupy's ``__snapshots__``.
SNAPSHOT_DIRNAME: Final = "__workload_snapshots__"
SNAPSHOT_SUFFIX: Final = ".workloads"
#: The longest file name (bytes) common file systems allow.
NAME_MAX: Final = 255
#: Characters a snapshot file name keeps as they are; every other one is escaped as ``%XX``
#: (its UTF-8 bytes), ``%`` included, so distinct test ids never share a file.
_SAFE: Final = frozenset(string.ascii_letters + string.digits + "._-[]=,+@")
#: Marks a name shortened to fit: never produced by escaping (``~`` is not in ``_SAFE``).
_SHORTENED: Final = "~"


def snapshot_stem(name: str) -> str:
    """The file name (without suffix) of the snapshot of the test named ``name``.

    Injective: unsafe characters are escaped, not dropped, and a name too long for the
    file-name limit is cut and given a short hash of the whole name.
    """
    escaped = "".join(
        c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
        for c in name
    )
    room = NAME_MAX - len(SNAPSHOT_SUFFIX)
    if len(escaped) <= room:
        return escaped
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    kept = escaped[: room - len(digest) - 1]
    if "%" in kept[-2:]:  # never cut an escape in two
        kept = kept[: kept.rindex("%")]
    return f"{kept}{_SHORTENED}{digest}"


def _too_new(data: object, scheme: int) -> str | None:
    """What makes a stored table too new for this release to read or rewrite, if anything."""
    if not isinstance(data, dict):
        return None
    layout, stored_scheme = data.get(SNAPSHOT_FORMAT_KEY), data.get("fingerprint_scheme")
    if isinstance(layout, int) and layout > SNAPSHOT_FORMAT:
        return f"snapshot format {layout} (this release reads format {SNAPSHOT_FORMAT})"
    if isinstance(stored_scheme, int) and stored_scheme > scheme:
        return f"fingerprint scheme {stored_scheme} (this release computes scheme {scheme})"
    return None


def _unverified(stored: SnapshotDocument) -> str | None:
    """Why a stored table is not what it claims: an entry whose hash is not the hash of its
    own structure hash and input under the scheme the file names (checked for the schemes
    this release computes)."""
    scheme = BUILTIN_SCHEMES.get(stored.scheme)
    if scheme is None:
        return None
    for i, e in enumerate(stored.entries):
        computed = scheme.workload_hash(e.structure_hash, e.input_signature)
        if computed != e.hash:
            return (
                f"workload {i} ({e.label}) stores hash {short(e.hash)}, but its structure hash "
                f"and input {e.input_signature.format()} give {short(computed)} under "
                f"fingerprint scheme {stored.scheme}"
            )
    return None


@dataclass(frozen=True)
class Stored:
    """What the stored file holds, as far as the gate must know before comparing."""

    too_new: str | None = None
    corrupt: str | None = None
    #: ``corrupt`` says the file is of a format no release wrote: regenerating it is due.
    old: bool = False
    #: The stored table, where it reads (also when ``corrupt`` says a hash is not verified).
    document: SnapshotDocument | None = None


def inspect_stored(path: Path, scheme: int) -> Stored:
    if not path.exists():
        return Stored()
    try:
        data = load_json(read_text(path))
    except CorruptFileError as exc:
        return Stored(corrupt=exc.reason.removeprefix("is corrupt: "))
    except WorkloadDataError as exc:
        return Stored(corrupt=str(exc))
    too_new = _too_new(data, scheme)
    if too_new is not None:
        return Stored(too_new=too_new)
    try:
        stored = SnapshotDocument.from_dict(data)
    except OldFormatError as exc:
        return Stored(corrupt=str(exc), old=True)
    except WorkloadDataError as exc:
        return Stored(corrupt=str(exc))
    return Stored(corrupt=_unverified(stored), document=stored)


def may_stay(text: str, recorded: SnapshotDocument, tolerance: float, *, updating: bool) -> bool:
    """Whether the stored text may stay as it is beside the recorded table: it reads and
    matches it; under ``--snapshot-update`` also holds UTF-8 only, verifies, and no cost shrank
    since (else it is rewritten). ``text`` holds bytes that are not UTF-8 as escapes."""
    try:
        stored = SnapshotDocument.from_text(text)
    except WorkloadDataError:
        return False
    if not documents_match(stored, recorded, tolerance):
        return False
    if not updating:
        return True
    return _is_utf8(text) and _unverified(stored) is None and not shrunk(stored, recorded)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
