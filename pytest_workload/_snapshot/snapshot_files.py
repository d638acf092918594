"""A workload snapshot file on disk: its injective name, what it holds before it is compared
(too new to read, corrupt, or edited by hand so that a hash no longer matches what it claims to
hash) and why it is refused. Nothing here writes it; no syrupy here."""

from __future__ import annotations

import hashlib
import os
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .._core.errors import CorruptFileError, OldFormatError, WorkloadDataError
from .._core.files import SNAPSHOT_FORMAT, SNAPSHOT_FORMAT_KEY, outside, read_text
from .._core.strict_json import load_json
from .._core.text import Commands, one_line, short
from .._fingerprint.scheme import CURRENT_SCHEME
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
    """The file name (without suffix) of the test ``name``'s snapshot. Injective: unsafe
    characters are escaped, and a name too long is cut and given a short hash of the whole."""
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
    own structure hash and input under the scheme the file names (this release's: one of
    another is refused before)."""
    for i, e in enumerate(stored.entries):
        computed = CURRENT_SCHEME.workload_hash(e.structure_hash, e.input_signature)
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

    corrupt: str | None = None
    #: ``corrupt`` says the file is of an older format or scheme: regenerating it is due.
    old: bool = False
    #: The stored table, where it reads (also when ``corrupt`` says a hash is not verified).
    document: SnapshotDocument | None = None


def _read_stored(path: Path, scheme: int) -> Stored | str:
    """What the file holds, or what makes it too new to read or rewrite."""
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
        return too_new
    try:
        stored = SnapshotDocument.from_dict(data)
    except OldFormatError as exc:
        return Stored(corrupt=str(exc), old=True)
    except WorkloadDataError as exc:
        return Stored(corrupt=str(exc))
    if stored.scheme < scheme:
        old = OldFormatError(f"fingerprint scheme {stored.scheme}", f"scheme {scheme}")
        return Stored(corrupt=str(old), old=True)
    return Stored(corrupt=_unverified(stored), document=stored)


def inspect(
    location: str,
    shown: str,
    document: SnapshotDocument,
    rootdir: Path | None,
    commands: Commands,
    *,
    repair: bool,
) -> Stored | str | None:
    """What is stored, or why the file is refused and left as it is (a plain
    ``--snapshot-update`` may ``repair`` a corrupt one); None: nothing to check."""
    real = None if rootdir is None else outside(Path(location), rootdir)
    if real is not None:
        return (
            f"workload snapshot {shown} leads to {real}, outside the rootdir {rootdir}: "
            "it is left as it is and nothing is written there, also under --snapshot-update"
        )
    if not document.entries and not os.path.exists(location):
        return None
    stored = _read_stored(Path(location), document.scheme)
    if isinstance(stored, str):
        return (
            f"workload snapshot {shown} was written by {one_line(stored)}: upgrade "
            "pytest-workload to check it. It is left as it is, also under --snapshot-update"
        )
    if stored.corrupt is None or repair:
        return stored
    if stored.old:
        return (
            f"workload snapshot {shown} is of {one_line(stored.corrupt)}; regenerate it with "
            f"{commands.accept}"
        )
    return (
        f"corrupt workload snapshot {shown}: {one_line(stored.corrupt)}. It is left as it is; "
        f"fix it or regenerate it with {commands.accept}"
    )
