"""What crosses between pytest-xdist processes: a worker's payload (the session writes it and
reads it), and which worker ran what, to name a crashed worker's tests."""

from __future__ import annotations

from typing import Any

from ._core.errors import WorkloadDataError
from ._core.text import one_line
from ._session import WorkloadSession

#: Key of this plugin's payload in an xdist worker's ``workeroutput``.
WORKER_OUTPUT_KEY = "pytest_workload"


class WorkerMerge:
    """The controller's side: which worker ran what, and handing each payload to the session."""

    def __init__(self, session: WorkloadSession) -> None:
        self.session = session
        self._ran_on: dict[str, dict[str, None]] = {}
        #: Workers that crashed or were killed: their tests' uses of snapshots never arrived.
        self.crashed: list[str] = []

    def ran_on(self, worker: str, nodeid: str) -> None:
        """Note that a test ran on a worker, to name it if that worker crashes."""
        self._ran_on.setdefault(worker, {})[nodeid] = None

    def merge(self, worker: str, data: Any) -> None:
        """Take in what one worker recorded; a crashed worker sent nothing."""
        if data is None:
            self.crashed.append(worker)
            ran = list(self._ran_on.get(worker, {}))
            kept = (
                "; no snapshot was deleted as unused, since its tests' uses are unknown (as "
                "with --snapshot-no-cleanup)"
                if self.session.settings.update
                else ""
            )
            self.session.problems.append(
                f"xdist worker {worker} sent no workload data (it crashed or was killed): the "
                "workloads of its tests are missing from this report"
                + (f": {', '.join(one_line(n) for n in ran)}" if ran else "")
                + kept
            )
            return
        if not isinstance(data, dict):
            raise WorkloadDataError(f"xdist worker payload: expected an object, got {data!r:.80}")
        self.session.absorb(data)
