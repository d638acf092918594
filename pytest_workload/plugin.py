"""pytest glue: hooks and fixtures over the session (``_session``)."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest
from syrupy.assertion import SnapshotAssertion

from ._core.errors import DeviceUnavailableError, WorkloadWarning
from ._core.text import one_line, terminal_text
from ._options import MARKER_HELP, WorkloadsMark, add_options, parse_mark, read_settings
from ._perf.orchestrate import TimingProgress
from ._recording.recorder import WorkloadRecorder, module_calls
from ._report.summary import junit_properties, render_counts, render_report, render_stops
from ._session import WorkloadSession
from .xdist import BAD_MARKER, WORKER_OUTPUT_KEY, WorkerMerge, sendable

if TYPE_CHECKING:
    import torch


SESSION_KEY = pytest.StashKey[WorkloadSession]()
MERGE_KEY = pytest.StashKey[WorkerMerge]()
MARK_KEY = pytest.StashKey[WorkloadsMark]()
RECORDER_KEY = pytest.StashKey[WorkloadRecorder]()
#: Lines for the end of the terminal summary, each with whether it is red: why an update
#: deleted no snapshot as unused, why the JSON report could not be written.
LAST_LINES_KEY = pytest.StashKey[list[tuple[str, bool]]]()
#: Set once the test loop has run to its end.
LOOP_DONE_KEY = pytest.StashKey[bool]()
SNAPSHOT_KEY = pytest.StashKey[SnapshotAssertion]()
#: Fixtures that called a model in their setup: by name, the node ids they were defined for.
MODEL_FIXTURES_KEY = pytest.StashKey[dict[str, set[str]]]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    settings = read_settings(config)
    if settings.snapshot and not config.pluginmanager.hasplugin("syrupy"):
        raise pytest.UsageError("--workload-snapshot needs the syrupy plugin, which is disabled")
    session = WorkloadSession(settings)
    if settings.device != "auto":  # an explicit device must exist; auto never imports torch here
        try:
            session.device()
        except DeviceUnavailableError as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[SESSION_KEY] = session
    config.stash[MERGE_KEY] = WorkerMerge(session)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(config.stash[MERGE_KEY])


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    reporter: pytest.TerminalReporter | None = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(config, "workerinput") or config.get_verbosity() < 0:
        return
    live = bool(reporter.isatty()) and not os.environ.get("CI")

    def show(line: str, finished: bool) -> None:
        reporter.ensure_newline()  # live: pytest writes the test file's name again after it
        if live:
            reporter.rewrite(line, erase=True)
        else:
            reporter.write_line(line)

    config.stash[SESSION_KEY].progress = TimingProgress(show, live=live)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    record_all = config.stash[SESSION_KEY].settings.record == "all"
    for item in items:
        mark = parse_mark(item)
        if mark is None and record_all:
            mark = WorkloadsMark(marked=False)
        if mark is not None and mark.record:
            item.stash[MARK_KEY] = mark


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """On an xdist worker, a bad marker fails its collector: the controller, which collects
    nothing, then reports it, where a usage error would crash the worker."""
    report = yield
    if hasattr(collector.config, "workerinput") and report.passed:
        for item in (i for i in report.result if isinstance(i, pytest.Item)):
            try:
                parse_mark(item)
            except pytest.UsageError as exc:
                report.outcome, report.longrepr = "failed", f"{BAD_MARKER}{exc}"
                break
    return report


def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[SESSION_KEY].set_collection_order([i.nodeid for i in session.items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    node.config.stash[SESSION_KEY].set_collection_order(ids)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: Any
) -> Generator[None, Any, Any]:
    with module_calls() as called:
        result = yield
    if called:
        found = request.config.stash.setdefault(MODEL_FIXTURES_KEY, {})
        found.setdefault(fixturedef.argname, set()).add(fixturedef.baseid)
    return result


def _model_fixtures(item: pytest.Item) -> list[str]:
    found = item.config.stash.get(MODEL_FIXTURES_KEY, {})
    # (a fixture is seen below the directory, module or class it was defined for)
    return [
        name
        for name in getattr(item, "fixturenames", ())
        if any(not b or item.nodeid.startswith((b + "/", b + "::")) for b in found.get(name, ()))
    ]


@pytest.fixture(autouse=True)
def _workload_recording(request: pytest.FixtureRequest) -> Iterator[WorkloadRecorder | None]:
    item = request.node
    mark = item.stash.get(MARK_KEY, None)
    if mark is None and "workloads" not in request.fixturenames:
        yield None
        return
    describe, key = item.ihook.pytest_workload_describe, item.ihook.pytest_workload_key
    session = request.config.stash[SESSION_KEY]
    recorder = WorkloadRecorder(
        item.nodeid,
        scheme=session.scheme,
        max_depth=mark.max_depth if mark else 0,
        timing=session.settings.timing,
        rootdir=session.settings.rootdir,
        describe=(lambda value: describe(value=value)) if describe.get_hookimpls() else None,
        keyer=(lambda module, args, kwargs: key(module=module, args=args, kwargs=kwargs))
        if key.get_hookimpls()
        else None,
        # a test that asked for its workloads (a marker, the fixture) is replayed for timing
        replays=mark is None or mark.marked or "workloads" in request.fixturenames,
    )
    recorder.compile_backend = None if mark is None else mark.compile
    item.stash[RECORDER_KEY] = recorder
    if request.config.pluginmanager.hasplugin("syrupy"):
        # also without the gate: a stored table is then counted as not checked
        item.stash[SNAPSHOT_KEY] = request.getfixturevalue("snapshot")
    yield recorder
    recorder.release()


@pytest.fixture
def workloads(_workload_recording: WorkloadRecorder | None) -> WorkloadRecorder:
    """The test's ``WorkloadRecorder``: ``workloads.track(model, max_depth=N)`` records a model
    in an unmarked test, ``workloads.workloads()`` returns what was recorded so far.

    ``track`` returns the model. Under the ``workloads`` marker every module called at top
    level is already recorded. ``workloads()`` returns a ``TestWorkloads``, for the test's own
    asserts. Timings and FLOPs are measured after the test body, so they are not in what the
    test itself reads.
    """
    if _workload_recording is None:  # asked for after the recording began, or not at all
        pytest.fail(
            "pytest-workload: the workloads fixture must be a test argument (or the test "
            "marked @pytest.mark.workloads): request.getfixturevalue('workloads') comes after "
            "the recording began",
            pytrace=False,
        )
    return _workload_recording


@pytest.fixture(scope="session")
def workload_device(request: pytest.FixtureRequest) -> torch.device:
    """The ``torch.device`` chosen by ``--workload-device`` (auto: CUDA, else MPS, else CPU).

    Place models and inputs on it; workloads are timed on the device they run on.
    """
    return request.config.stash[SESSION_KEY].device()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    recorder = item.stash.get(RECORDER_KEY, None)
    if recorder is None:
        return (yield)
    try:
        with recorder.recording(all_roots=MARK_KEY in item.stash):
            result = yield
    except BaseException:
        _finish(item, recorder, passed=False)
        raise
    _finish(item, recorder, passed=True)
    return result


def _finish(item: pytest.Item, recorder: WorkloadRecorder, *, passed: bool) -> None:
    session, mark = item.config.stash[SESSION_KEY], item.stash.get(MARK_KEY, None)
    verdict = session.finish_test(
        recorder,
        item.stash.get(SNAPSHOT_KEY, None),
        passed=passed,
        tolerance=None if mark is None else mark.perf_tolerance,
        fixtures=_model_fixtures(item),
    )
    item.user_properties.extend(junit_properties(session.test(recorder.nodeid)))
    for warning in verdict.warnings:
        item.warn(WorkloadWarning(terminal_text(warning)))
    if verdict.failures:
        pytest.fail(terminal_text("\n\n".join(verdict.failures)), pytrace=False)


def _write(
    reporter: pytest.TerminalReporter,
    title: str | None,
    lines: Sequence[str],
    sep: str = "-",
    red: bool = False,
) -> None:
    if lines and title:
        reporter.write_sep(sep, title, red=red)
    for line in lines:
        reporter.write_line(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    if hasattr(config, "workerinput"):
        return
    session = config.stash[SESSION_KEY]
    settings = session.settings
    quiet = config.get_verbosity() < 0  # -q: no report, notes counted; problems still shown
    if not quiet:
        report = render_report(
            session.tests,
            settings.report,
            collapses=len(session.keys.found),
            gated=settings.snapshot,
            failed=session.gate_failed,
            regressions=session.regressions,
        )
        _write(terminalreporter, "Workloads discovered", report, "=")
        _write(terminalreporter, "workload compute hash stops", render_stops(session.tests))
    perf_notes, notes = session.note_lines(quiet=quiet)
    _write(terminalreporter, None if quiet else "workload performance", perf_notes)
    unchecked = session.unchecked_line()
    counted = render_counts(session.tests, settings.session_budget, settings.commands)
    _write(terminalreporter, None, counted + ([] if unchecked is None else [unchecked]))
    _write(terminalreporter, "workload snapshot notes", notes)
    for line, red in config.stash.get(LAST_LINES_KEY, []):
        terminalreporter.write_line(line, red=red)
    problems = [terminal_text(p) for p in session.problems]
    _write(terminalreporter, "workload problems across xdist workers", problems, "=", red=True)


def pytest_deselected(items: Sequence[pytest.Item]) -> None:
    if items:
        not_run = items[0].config.stash[SESSION_KEY].snapshots.not_run
        not_run.update(dict.fromkeys(i.nodeid for i in items))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    session = item.config.stash[SESSION_KEY]
    if report.when == "setup" and report.failed:
        session.snapshots.not_run[item.nodeid] = None
    elif report.when == "teardown":
        session.torn_down(item.nodeid, failed=report.failed)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    result = yield
    # not set when cut short, also by a second Ctrl-C while pytest handles the first, after
    # which it finishes the session with status OK
    session.config.stash[LOOP_DONE_KEY] = True
    return result


def _keep_unused(session: pytest.Session) -> None:
    """Tests that never ran, or whose crashed worker never reported, did not use their
    snapshots as far as syrupy knows: such an update must not delete them (syrupy's own
    --snapshot-no-cleanup). An update narrowed to upgrades deletes nothing."""
    config = session.config
    workload_session = config.stash[SESSION_KEY]
    settings = workload_session.settings
    if not hasattr(config.option, "no_cleanup") or config.option.no_cleanup:
        return
    if settings.accept_upgrade or config.stash[MERGE_KEY].crashed:
        config.option.no_cleanup = True  # (said where each is said)
        return
    finished = config.stash.get(LOOP_DONE_KEY, False) and not (
        session.shouldstop or session.shouldfail
    )
    why = workload_session.snapshots.unused_refusal(finished=finished)
    if why is not None:
        config.option.no_cleanup = True
        if settings.update:
            line = f"pytest-workload: no snapshot was deleted as unused: {why}"
            config.stash.setdefault(LAST_LINES_KEY, []).append((terminal_text(line), False))


@pytest.hookimpl(wrapper=True)  # around syrupy's, which deletes unused snapshots
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
    config = session.config
    workload_session = config.stash[SESSION_KEY]
    _keep_unused(session)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[WORKER_OUTPUT_KEY] = sendable(workload_session)
    yield
    if workeroutput is None:
        if workload_session.check_collapses() and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        why = workload_session.write_json(
            lambda report: config.hook.pytest_workload_update_json(config=config, report=report)
        )
        if why is not None:
            # said in the terminal summary, which comes after this hook; a usage error, since
            # the report asked for is missing, or lacks what a hook was to add
            line = f"pytest-workload: {one_line(why)}"
            config.stash.setdefault(LAST_LINES_KEY, []).append((line, True))
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
