"""Under pytest-xdist: what a worker sends its controller, and the controller's plugin that
merges what each worker ran and sent."""

from __future__ import annotations

from typing import Any, Final

import pytest

from ._core.errors import WorkloadDataError
from ._core.strict_json import canonical_json, load_json
from ._core.text import one_line, plural
from ._session import WorkloadSession

#: The key of a payload that a worker could not send, with why.
UNSENT: Final = "unsent"
#: How many of a lost worker's tests its one line names.
NAMED: Final = 3
#: Key of this plugin's payload in an xdist worker's ``workeroutput``.
WORKER_OUTPUT_KEY: Final = "pytest_workload"
#: How a worker's failed collection says that a marker is bad (see pytest_make_collect_report).
BAD_MARKER: Final = "pytest-workload: bad marker: "


def sendable(session: WorkloadSession) -> dict[str, Any]:
    """The worker's payload as builtins only (execnet sends no other type, and a worker that
    fails to send dies); why not, in one field, where it is not JSON."""
    try:
        payload = load_json(canonical_json(session.to_payload()))
    except (TypeError, ValueError, WorkloadDataError) as exc:
        return {UNSENT: f"{type(exc).__name__}: {exc}"}
    assert isinstance(payload, dict)
    return payload


class WorkerMerge:
    """The xdist controller's side, a plugin there alone: which worker ran what, to name a lost
    worker's tests; a bad marker a worker reported (see ``pytest_make_collect_report``) is
    turned back into the usage error it is."""

    def __init__(self, session: WorkloadSession) -> None:
        self.session = session
        self._ran_on: dict[str, dict[str, None]] = {}
        #: Workers that crashed, were killed or could not send: their tests' uses of
        #: snapshots never arrived.
        self.crashed: list[str] = []
        self.bad_marker = False

    def ran_on(self, worker: str, nodeid: str) -> None:
        self._ran_on.setdefault(worker, {})[nodeid] = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node: Any = getattr(report, "node", None)  # the worker that ran it
        gateway = getattr(node, "gateway", None)
        if gateway is not None:
            self.ran_on(gateway.id, report.nodeid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        # A crashed worker has no workeroutput at all.
        payload = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
        worker = getattr(node, "gateway", None)
        self.merge(getattr(worker, "id", "?"), payload)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and str(report.longrepr).startswith(BAD_MARKER):
            self.bad_marker = True

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.bad_marker:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        elif self.crashed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # workload data was lost

    def merge(self, worker: str, data: dict[str, Any] | None) -> None:
        """``data``: what ``sendable`` gave; None from a worker that crashed."""
        if data is not None and UNSENT not in data:
            self.session.absorb(data)
            return
        self.crashed.append(worker)
        why = (
            "sent no workload data (it crashed or was killed)"
            if data is None
            else f"could not send its workload data ({one_line(str(data[UNSENT]))})"
        )
        self.session.problems.append(f"xdist worker {worker} {why}: {self._lost(worker)}")

    def _lost(self, worker: str) -> str:
        ran = list(self._ran_on.get(worker, {}))
        shown = ", ".join(one_line(n) for n in ran[:NAMED])
        if len(ran) > NAMED:
            shown += f" and {len(ran) - NAMED} more"
        lost = f"the workloads of its {plural(len(ran), 'test')} are missing from this report"
        lost += f" ({shown})" if ran else ""
        if self.session.settings.update:
            lost += (
                "; no snapshot was deleted as unused, since its tests' uses are unknown (as "
                "with --snapshot-no-cleanup)"
            )
        return lost
