"""A workload snapshot file on disk: its injective name, its text (a test's folded table as
review-friendly JSON), and what it holds before it is compared (too new to read, corrupt, or
edited by hand so that a hash no longer matches what it claims to hash), read once for the
extension. Nothing here writes it; no syrupy here."""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from .._core.errors import CorruptFileError, FutureFormatError, OldFormatError, WorkloadDataError
from .._core.files import decode_text, read_bytes
from .._core.strict_json import Json, load_json
from .._core.text import short
from .._fingerprint.structure import CURRENT_SCHEME
from .._workload.workload import TestWorkloads

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


def snapshot_text(test: TestWorkloads) -> str:
    """One field per line, signatures kept on one line, and one operation and one module
    description per line, so a change is one changed line."""
    return _object(test.to_snapshot().items(), 2) + "\n"


def inline_json(value: Any) -> str:
    """JSON on one line, as the snapshot text and the messages show a value."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _block(rows: Iterable[str], indent: int, brackets: str = "{}") -> str:
    """``rows`` one per line at ``indent`` spaces, inside brackets that close two spaces left."""
    pad = " " * indent
    return f"{brackets[0]}\n" + ",\n".join(pad + r for r in rows) + f"\n{pad[:-2]}{brackets[1]}"


def _object(fields: Iterable[tuple[str, Json]], indent: int, key: str | None = None) -> str:
    """One field per line, each value rendered as its own key's (or as ``key``'s)."""
    rows = (
        f"{inline_json(k)}: {_render(k if key is None else key, v, indent + 2)}" for k, v in fields
    )
    return _block(rows, indent)


def _render(key: str, value: Json, indent: int) -> str:
    """A field's value: each workload, operation, module description and submodule on its
    own line, anything else inline."""
    if key == "workloads" and isinstance(value, list) and value:
        rows = (_object(e.items(), indent + 2) for e in value if isinstance(e, dict))
        return _block(rows, indent, "[]")
    if key in ("computations", "modules", "submodules") and isinstance(value, dict) and value:
        return _object(value.items(), indent, "operations" if key == "computations" else "")
    if key == "operations" and isinstance(value, list) and value:
        return _block((inline_json(v) for v in value), indent, "[]")
    return inline_json(value)


def _unverified(stored: TestWorkloads) -> str | None:
    """Why a stored table is not what it claims: an entry whose hash is not the hash of its
    own structure hash and input under the scheme the file names (this release's: one of
    another is refused before)."""
    for i, e in enumerate(stored):
        computed = CURRENT_SCHEME.workload_hash(e.structure_hash, e.input_signature)
        if computed != e.hash:
            return (
                f"workload {i} ({e.label}) stores hash {short(e.hash)}, but its structure hash "
                f"and input {e.input} give {short(computed)} under "
                f"fingerprint scheme {CURRENT_SCHEME.version}"
            )
    return None


@dataclass(frozen=True)
class Stored:
    """A workload snapshot file as its one read found it: what the verdict must know, and
    what syrupy compares and a failed teardown puts back."""

    #: There is a file (whether or not it reads).
    exists: bool = False
    #: Its text, with bytes that are not UTF-8 kept as escapes so that it matches only itself;
    #: empty where there is no file or it could not be read (never a table's text).
    text: str = ""
    #: What a write there would replace, as :func:`.._core.files.held` gives it (None: not read).
    held: tuple[bytes | None] | None = (None,)
    corrupt: str | None = None
    #: ``corrupt`` says the file is of an older format or scheme: regenerating it is due.
    old: bool = False
    #: The release that wrote it is newer than this one: it is left as it is.
    too_new: str | None = None
    #: The stored table, where it reads (also when ``corrupt`` says a hash is not verified).
    table: TestWorkloads | None = None


def read_stored(path: Path) -> Stored:
    """What the file at ``path`` holds, read once and parsed by the strict reader."""
    if not path.exists():
        return Stored()
    try:
        raw = read_bytes(path)
    except CorruptFileError as exc:
        return Stored(True, held=None, corrupt=exc.reason.removeprefix("is corrupt: "))
    found = Stored(True, raw.decode("utf-8", "surrogateescape"), (raw,))
    try:
        stored = TestWorkloads.from_snapshot(load_json(decode_text(path, raw)))
    except CorruptFileError as exc:
        return replace(found, corrupt=exc.reason.removeprefix("is corrupt: "))
    except FutureFormatError as exc:
        return replace(found, too_new=str(exc))
    except WorkloadDataError as exc:
        return replace(found, corrupt=str(exc), old=isinstance(exc, OldFormatError))
    return replace(found, corrupt=_unverified(stored), table=stored)
