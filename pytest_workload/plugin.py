"""pytest glue: options, the ``workloads`` marker, fixtures and hooks. Nothing else lives here."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from .fingerprint import BUILTIN_SCHEMES, CURRENT_SCHEME, FingerprintScheme
from .recorder import Keyer, WorkloadRecorder
from .session import WORKER_OUTPUT_KEY, WorkloadSession, WorkloadSettings
from .signature import Describer

MARKER = "workloads"


@dataclass(frozen=True)
class WorkloadsMark:
    """A validated ``@pytest.mark.workloads(...)``."""

    max_depth: int = 0


SESSION_KEY = pytest.StashKey[WorkloadSession]()
MARK_KEY = pytest.StashKey[WorkloadsMark]()
RECORDER_KEY = pytest.StashKey[WorkloadRecorder]()
SNAPSHOT_KEY = pytest.StashKey[SnapshotAssertion]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_workload_schemes(config: pytest.Config) -> list[FingerprintScheme]:
    return list(BUILTIN_SCHEMES.values())


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("workload", "workload fingerprints (pytest-workload)")
    group.addoption(
        "--workload-snapshot",
        action="store_true",
        default=None,
        help="compare each test's workloads with its syrupy snapshot and fail on collapses, "
        "hash changes and new or vanished workloads (default: off; ini: workload_snapshot)",
    )
    group.addoption(
        "--workload-json",
        metavar="PATH",
        default=None,
        help="write every test's workloads to PATH as JSON (default: none; ini: workload_json)",
    )
    group.addoption(
        "--workload-timing",
        choices=("on", "off"),
        default=None,
        help="time recorded calls; 'off' keeps recording and hashes (default: on; "
        "ini: workload_timing)",
    )
    group.addoption(
        "--workload-migrate",
        action="store_true",
        default=False,
        help="rewrite workload snapshots of an older fingerprint scheme under the current one, "
        "after checking that every stored hash still matches under the old scheme "
        "(default: off; needs --workload-snapshot)",
    )
    parser.addini(
        "workload_snapshot", "default for --workload-snapshot", type="bool", default=False
    )
    parser.addini("workload_json", "default for --workload-json", default="")
    parser.addini("workload_timing", "default for --workload-timing (on/off)", default="on")


def _settings(config: pytest.Config) -> WorkloadSettings:
    snapshot = config.getoption("workload_snapshot")
    json_path = config.getoption("workload_json") or config.getini("workload_json")
    timing = config.getoption("workload_timing") or config.getini("workload_timing")
    if timing not in ("on", "off"):
        raise pytest.UsageError(f"workload_timing must be 'on' or 'off', got {timing!r}")
    settings = WorkloadSettings(
        snapshot=bool(config.getini("workload_snapshot") if snapshot is None else snapshot),
        timing=timing == "on",
        json_path=Path(config.invocation_params.dir, json_path) if json_path else None,
        migrate=config.getoption("workload_migrate"),
        rootdir=config.rootpath,
    )
    if settings.migrate and not settings.snapshot:
        raise pytest.UsageError("--workload-migrate needs --workload-snapshot")
    return settings


def _schemes(config: pytest.Config) -> list[FingerprintScheme]:
    by_version: dict[int, FingerprintScheme] = {}
    for group in config.hook.pytest_workload_schemes(config=config):
        for scheme in group:
            if by_version.setdefault(scheme.version, scheme) != scheme:
                raise pytest.UsageError(
                    f"two different fingerprint schemes claim version {scheme.version}"
                )
    return sorted(by_version.values(), key=lambda s: s.version)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(max_depth=0): record every module this test calls at top level, and its "
        "submodules down to max_depth, as workloads",
    )
    settings = _settings(config)
    if settings.snapshot and not config.pluginmanager.hasplugin("syrupy"):
        raise pytest.UsageError("--workload-snapshot needs the syrupy plugin, which is disabled")
    config.stash[SESSION_KEY] = WorkloadSession(settings, CURRENT_SCHEME, _schemes(config))


def parse_mark(item: pytest.Item) -> WorkloadsMark | None:
    """Turn the closest ``workloads`` marker into a WorkloadsMark; bad ones are usage errors."""
    mark = item.get_closest_marker(MARKER)
    if mark is None:
        return None
    where = f"{item.nodeid}: @pytest.mark.{MARKER}"
    if mark.args:
        raise pytest.UsageError(f"{where} takes keyword arguments only, got {mark.args!r}")
    unknown = sorted(set(mark.kwargs) - {"max_depth"})
    if unknown:
        raise pytest.UsageError(
            f"{where} got unknown argument {', '.join(unknown)} (it takes max_depth)"
        )
    max_depth = mark.kwargs.get("max_depth", 0)
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
        raise pytest.UsageError(f"{where}(max_depth=...) must be an int >= 0, got {max_depth!r}")
    return WorkloadsMark(max_depth=max_depth)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        mark = parse_mark(item)
        if mark is not None:
            item.stash[MARK_KEY] = mark


def _describer(item: pytest.Item) -> Describer | None:
    hook = item.ihook.pytest_workload_describe
    return (lambda value: hook(value=value)) if hook.get_hookimpls() else None


def _keyer(item: pytest.Item) -> Keyer | None:
    hook = item.ihook.pytest_workload_key
    if not hook.get_hookimpls():
        return None
    return lambda module, args, kwargs: hook(module=module, args=args, kwargs=kwargs)


def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[SESSION_KEY].set_collection_order([i.nodeid for i in session.items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    node.config.stash[SESSION_KEY].set_collection_order(ids)


@pytest.fixture(autouse=True)
def _workload_recording(request: pytest.FixtureRequest) -> Iterator[WorkloadRecorder | None]:
    item = request.node
    mark = item.stash.get(MARK_KEY, None)
    if mark is None and "workloads" not in request.fixturenames:
        yield None
        return
    session = request.config.stash[SESSION_KEY]
    recorder = session.new_recorder(
        item.nodeid,
        max_depth=mark.max_depth if mark else 0,
        describe=_describer(item),
        keyer=_keyer(item),
    )
    item.stash[RECORDER_KEY] = recorder
    if session.settings.snapshot:
        item.stash[SNAPSHOT_KEY] = request.getfixturevalue("snapshot")
    yield recorder
    recorder.stop()


@pytest.fixture
def workloads(_workload_recording: WorkloadRecorder | None) -> WorkloadRecorder:
    """The test's workload recorder.

    ``workloads.track(model, max_depth=N)`` records a model in an unmarked test;
    ``workloads.workloads()`` returns what was recorded so far, for the test's own asserts.
    """
    assert _workload_recording is not None
    return _workload_recording


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    recorder = item.stash.get(RECORDER_KEY, None)
    if recorder is None:
        return (yield)
    session = item.config.stash[SESSION_KEY]
    try:
        with recorder.recording(all_roots=MARK_KEY in item.stash):
            result = yield
    except BaseException:
        session.finish_test(recorder, None, passed=False)
        raise
    failures = session.finish_test(recorder, item.stash.get(SNAPSHOT_KEY, None), passed=True)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    return result


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    if config.get_verbosity() < 0 or hasattr(config, "workerinput"):
        return
    session = config.stash[SESSION_KEY]
    lines = session.terminal_lines()
    if lines:
        terminalreporter.write_sep("=", "Workloads discovered")
        for line in lines:
            terminalreporter.write_line(line)
    if session.notes:
        terminalreporter.write_sep("-", "workload snapshot migrations")
        for note in session.notes:
            terminalreporter.write_line(note)
    if session.problems:
        terminalreporter.write_sep("=", "workload problems across xdist workers", red=True)
        for problem in session.problems:
            terminalreporter.write_line(problem)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    workload_session = config.stash[SESSION_KEY]
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[WORKER_OUTPUT_KEY] = workload_session.worker_payload()
    else:
        if workload_session.check_across_workers():
            session.exitstatus |= pytest.ExitCode.TESTS_FAILED
        workload_session.write_json(
            lambda report: config.hook.pytest_workload_update_json(config=config, report=report)
        )


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    # A crashed worker has no workeroutput at all.
    payload = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
    worker = getattr(node, "gateway", None)
    node.config.stash[SESSION_KEY].merge_worker_payload(getattr(worker, "id", "?"), payload)
