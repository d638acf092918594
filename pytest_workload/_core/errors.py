"""The errors pytest-workload raises on purpose."""

from __future__ import annotations


class WorkloadError(Exception):
    """Base class of every error pytest-workload raises on purpose.

    Catch it to handle any of them; its message is one line that names what went wrong.

    Example:
        ```python
        try:
            report = read_report(path)
        except WorkloadError as exc:
            sys.exit(f"error: {exc}")
        ```
    """


class UndescribableInputError(WorkloadError, TypeError):
    """Raised instead of falling back to ``id()`` or ``repr()``, which would give every call its
    own hash (or, worse, a hash that depends on memory layout)."""

    def __init__(self, path: str, cls: type, reason: str | None = None) -> None:
        why = reason or (
            "pytest-workload describes tensors, numpy arrays, bool/int/float/str/None, enums, "
            "torch dtypes and devices, and tuples, lists, dicts, namedtuples and dataclasses of "
            "them; describe other types with the pytest_workload_describe hook"
        )
        type_name = f"{cls.__module__}.{cls.__qualname__}"
        super().__init__(f"cannot describe input {path} of type {type_name}: {why}")


class WorkloadWarning(UserWarning):
    """What would fail a test under ``--workload-snapshot`` but, without the gate, only warns.

    For example, a call whose input is a generator cannot be described: under the gate the test
    fails naming the argument path; without it, the test passes with this warning, which names
    it. Whatever else the recorder could not record (an internal error) warns the same way.

    Example:
        Turn it into an error with pytest's own option:
        ``pytest -W error::pytest_workload.WorkloadWarning``.
    """


class WorkloadDataError(WorkloadError, ValueError):
    """Stored workload data (a snapshot, a report, a baseline) is malformed."""


class FutureFormatError(WorkloadDataError):
    """Left alone, never rewritten."""


class OldFormatError(WorkloadDataError):
    def __init__(self, found: str, reads: str) -> None:
        super().__init__(f"{found}, older than this release reads ({reads})")


class CorruptFileError(WorkloadError):
    """``future``: of a newer format (upgrade rather than fix the file); ``old``: of an older
    format (regenerate it)."""

    def __init__(self, path: str, reason: str, *, future: bool = False, old: bool = False) -> None:
        self.path = path
        self.reason = reason
        self.future = future
        self.old = old
        super().__init__(f"{path}: {reason}")


class FileWriteError(WorkloadError, OSError):
    """Whatever the path held before is left as it was."""

    def __init__(self, path: str, cause: OSError) -> None:
        self.reason = cause.strerror or str(cause)
        super().__init__(f"cannot write {path}: {self.reason}")


class DeviceUnavailableError(WorkloadError):
    pass
