"""Files: writing snapshots, baselines and reports without losing or damaging anything, and
reading them with bounds. What is written where, by what the path is (a regular file, a
symlink, ``-`` or a FIFO, a directory), is docs/explanation/guarantees.md ("How a file is
written"); every read goes through :func:`~pytest_workload._core.strict_json.load_json`.

Every format version pytest-workload writes is set below (docs/how-to/library-upgrade.md). A
change to a format is a new number, never reused, and says how to migrate.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

from .errors import (
    CorruptFileError,
    FileWriteError,
    FutureFormatError,
    OldFormatError,
    WorkloadDataError,
)
from .strict_json import InvalidJsonError, load_json

T = TypeVar("T")

REPORT_SCHEMA_VERSION: Final = 1
#: What enters a workload hash (``_fingerprint.structure.CURRENT_SCHEME``).
FINGERPRINT_SCHEME: Final = 1
#: A snapshot file's layout, independent of the fingerprint scheme it records.
SNAPSHOT_FORMAT: Final = 1
#: The field of a snapshot file that holds its layout version.
SNAPSHOT_FORMAT_KEY: Final = "pytest_workload_snapshot"
BASELINE_FORMAT: Final = 1

#: The largest file read, refused by its size before it is read (what that bounds:
#: docs/explanation/guarantees.md, "Reading").
MAX_FILE_BYTES: Final = 16 << 20

STDOUT: Final = "-"

#: Characters of a file's name kept in its temporary file's name, so that a name that fits
#: the file-name limit still fits with the temporary file's affixes.
_TMP_NAME_CHARS: Final = 64


def _write_replacing(path: Path, data: bytes) -> None:
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name[:_TMP_NAME_CHARS]}.", suffix=".tmp", dir=path.parent
    )
    try:
        if st is None:
            umask = os.umask(0o022)  # (the one way to read it)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        else:
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
            if st.st_uid != os.getuid() or st.st_gid != os.getgid():
                # only root may give a file away; it keeps its mode all the same
                with contextlib.suppress(PermissionError):
                    os.fchown(fd, st.st_uid, st.st_gid)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def outside(path: Path, root: Path) -> str | None:
    """Where ``path`` really is when symlinks take it out of ``root``."""
    real = Path(os.path.realpath(path))
    return None if real.is_relative_to(os.path.realpath(root)) else str(real)


def write_text_atomic(
    path: Path, text: str, *, make_parents: bool = True, within: Path | None = None
) -> None:
    """``make_parents``: create missing directories (the plugin's own trees), or refuse (a path
    a user typed, where a missing directory is more likely a typo). ``within``: the root the
    write must not leave through a symlink."""
    if str(path) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if within is not None and (real := outside(path, within)) is not None:
        why = f"it leads to {real}, outside {within}; nothing is written there"
        raise FileWriteError(str(path), OSError(why))
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        try:
            mode = os.stat(target).st_mode
        except FileNotFoundError:
            mode = 0
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory")
        # a FIFO, character device or socket is written in place: replacing one would destroy
        # it (as root, /dev/null would become a regular file)
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode):
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
            return
        if make_parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        _write_replacing(target, text.encode("utf-8"))
    except OSError as exc:
        raise FileWriteError(str(path), exc) from None


def held(path: Path) -> tuple[bytes | None] | None:
    """``(None,)`` when there is no file; None when it cannot be read (a write there fails, or
    leaves nothing known to put back)."""
    try:
        return (path.read_bytes(),)
    except FileNotFoundError:
        return (None,)
    except OSError:
        return None


def restore(path: Path, data: bytes | None) -> None:
    """Put back what a file held before a write (None: nothing)."""
    try:
        if data is None:
            path.unlink(missing_ok=True)
        else:
            _write_replacing(Path(os.path.realpath(path)), data)
    except OSError as exc:
        raise FileWriteError(str(path), exc) from None


def read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            data = b"" if size > MAX_FILE_BYTES else f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise CorruptFileError(str(path), f"cannot be read ({exc.strerror or exc})") from None
    size = max(size, len(data))  # (a FIFO or device has no size until read)
    if size > MAX_FILE_BYTES:
        raise CorruptFileError(
            str(path),
            f"is corrupt: {size} bytes or more, over the {MAX_FILE_BYTES >> 20} MiB "
            "pytest-workload reads (refused before reading)",
        )
    return data


def decode_text(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptFileError(
            str(path), f"is corrupt: not UTF-8 text (byte {exc.start})"
        ) from None


def read_json_file(path: Path, parse: Callable[[object], T], what: str, regenerate: str = "") -> T:
    """``regenerate``: the command that rewrites a file of an older format, named in its error."""
    text = decode_text(path, read_bytes(path))
    try:
        return parse(load_json(text))
    except InvalidJsonError as exc:
        raise CorruptFileError(str(path), f"is {exc}") from None
    except FutureFormatError as exc:
        raise CorruptFileError(str(path), f"is of {exc}", future=True) from None
    except OldFormatError as exc:
        again = f"; regenerate it with `{regenerate}`" if regenerate else ""
        raise CorruptFileError(str(path), f"is of {exc}{again}", old=True) from None
    except WorkloadDataError as exc:
        raise CorruptFileError(str(path), f"is not a {what}: {exc}") from None
