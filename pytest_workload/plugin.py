"""pytest glue: options, the ``workloads`` marker, fixtures and hooks. Nothing else lives here."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from syrupy.assertion import SnapshotAssertion

from ._identity.describe import Describer
from ._identity.fingerprint import BUILTIN_SCHEMES, CURRENT_SCHEME, FingerprintScheme
from ._measure.device import check_device_spec
from ._model.baseline import BASELINE_DIRNAME
from ._model.errors import DeviceUnavailableError
from ._record.recorder import Keyer, WorkloadRecorder
from ._render.report import junit_properties
from ._session import WORKER_OUTPUT_KEY, WorkloadSession, WorkloadSettings
from ._verdict.drift import DEFAULT_TOLERANCE

if TYPE_CHECKING:
    import torch


MARKER = "workloads"


_MARK_ARGUMENTS = ("max_depth", "perf_tolerance", "record")


@dataclass(frozen=True)
class WorkloadsMark:
    """A validated ``@pytest.mark.workloads(...)``."""

    max_depth: int = 0
    perf_tolerance: float | None = None
    #: False opts a test out of ``--workload-record=all``.
    record: bool = True


SESSION_KEY = pytest.StashKey[WorkloadSession]()
#: Whether every test records (``--workload-record=all``), not only marked ones.
RECORD_ALL_KEY = pytest.StashKey[bool]()
MARK_KEY = pytest.StashKey[WorkloadsMark]()
RECORDER_KEY = pytest.StashKey[WorkloadRecorder]()
SNAPSHOT_KEY = pytest.StashKey[SnapshotAssertion]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_workload_schemes(config: pytest.Config) -> list[FingerprintScheme]:
    return list(BUILTIN_SCHEMES.values())


def number(value: str, *, positive: bool) -> float:
    """A float ``> 0`` (``positive``) or ``>= 0``; NaN and other text are rejected."""
    try:
        parsed = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not (parsed > 0 if positive else parsed >= 0):
        bound = "> 0" if positive else ">= 0"
        raise argparse.ArgumentTypeError(f"expected a number {bound}, got {value!r}")
    return parsed


def tolerance(value: str) -> float:
    """A slowdown fraction: ``0.2`` allows 20%."""
    return number(value, positive=False)


def _on_off(value: str) -> bool:
    if value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected 'on' or 'off', got {value!r}")
    return value == "on"


def _record_mode(value: str) -> str:
    if value not in ("marked", "all"):
        raise argparse.ArgumentTypeError(f"expected 'marked' or 'all', got {value!r}")
    return value


def _perf_mode(value: str) -> str:
    if value not in ("on", "off", "strict"):
        raise argparse.ArgumentTypeError(f"expected 'on', 'off' or 'strict', got {value!r}")
    return value


def _positive_float(value: str) -> float:
    return number(value, positive=True)


def _device(value: str) -> str:
    try:
        return check_device_spec(value)
    except DeviceUnavailableError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _dest(flag: str) -> str:
    """``--workload-perf`` is ``workload_perf``: the option's dest and its ini key."""
    return flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class _Option:
    """A command-line option with its ini key, parsed the same way from either."""

    flag: str
    default: str
    parse: Callable[[str], object]
    metavar: str
    help: str

    @property
    def ini(self) -> str:
        return _dest(self.flag)


_FLAGS = (
    (
        "--workload-snapshot",
        "compare each test's workloads with its syrupy snapshot; fail on collapses, hash, key or "
        "FLOP changes, new or vanished workloads, and timing regressions",
    ),
    (
        "--workload-migrate",
        "rewrite snapshots of an older fingerprint scheme under the current one, after checking "
        "every stored hash under the old scheme; needs --workload-snapshot",
    ),
)


_OPTIONS = (
    _Option(
        "--workload-record",
        "marked",
        _record_mode,
        "marked|all",
        "which tests record workloads: those with @pytest.mark.workloads or the workloads "
        "fixture, or every test (max_depth 0 unless a marker says otherwise; "
        "@pytest.mark.workloads(record=False) opts one out)",
    ),
    _Option("--workload-json", "", str, "PATH", "write every test's workloads to PATH as JSON"),
    _Option(
        "--workload-timing",
        "on",
        _on_off,
        "on|off",
        "time each top-level workload on its device; 'off' turns every timing off (hashes and "
        "FLOPs stay)",
    ),
    _Option(
        "--workload-time-budget",
        "0.25",
        _positive_float,
        "SECONDS",
        "time spent timing one workload, after at least 2 warm-up calls and 5 samples",
    ),
    _Option(
        "--workload-device",
        "auto",
        _device,
        "DEVICE",
        "device the workload_device fixture returns: auto (CUDA, else MPS, else CPU), cpu, "
        "cuda, cuda:N or mps",
    ),
    _Option(
        "--workload-perf",
        "on",
        _perf_mode,
        "on|off|strict",
        "with --workload-snapshot, fail on timing regressions against the baselines; with "
        "several xdist workers or other processes loading the machine 'on' only reports them, "
        "'strict' fails anyway; 'off' keeps every hash check",
    ),
    _Option(
        "--workload-perf-tolerance",
        str(DEFAULT_TOLERANCE),
        tolerance,
        "FRACTION",
        "slowdown the drift gate allows (0.2 = 20%%), beyond the measured noise; a marker's "
        "perf_tolerance overrides it",
    ),
    _Option(
        "--workload-baselines",
        BASELINE_DIRNAME,
        str,
        "DIR",
        "directory of the timing baselines, relative to the rootdir",
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("workload", "workload fingerprints (pytest-workload)")
    for flag, text in _FLAGS:
        ini = _dest(flag)
        group.addoption(
            flag,
            action=argparse.BooleanOptionalAction,  # --no-... turns an ini 'true' off
            default=None,
            help=f"{text} (default: off; ini: {ini})",
        )
        parser.addini(ini, f"default for {flag}", type="bool", default=False)
    for option in _OPTIONS:
        shown = option.default or "none"
        group.addoption(
            option.flag,
            metavar=option.metavar,
            type=option.parse,
            default=None,
            help=f"{option.help} (default: {shown}; ini: {option.ini})",
        )
        parser.addini(option.ini, f"default for {option.flag}", default=option.default)


def _value(config: pytest.Config, flag: str) -> Any:
    """An option's value: the command line if given, else the ini key, else the default."""
    dest = _dest(flag)
    given = config.getoption(dest)
    if given is not None:
        return given
    option = next((o for o in _OPTIONS if o.flag == flag), None)
    if option is None:
        return bool(config.getini(dest))
    raw = config.getini(dest)
    try:
        return option.parse(raw)
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini option {dest} = {raw!r}: {exc}") from None


def _settings(config: pytest.Config) -> WorkloadSettings:
    json_path = _value(config, "--workload-json")
    settings = WorkloadSettings(
        snapshot=_value(config, "--workload-snapshot"),
        update=bool(config.getoption("update_snapshots", False)),
        timing=_value(config, "--workload-timing"),
        time_budget_s=_value(config, "--workload-time-budget"),
        perf=_value(config, "--workload-perf"),
        workers=int(getattr(config, "workerinput", {}).get("workercount", 1)),
        tolerance=_value(config, "--workload-perf-tolerance"),
        baselines=config.rootpath / _value(config, "--workload-baselines"),
        device=_value(config, "--workload-device"),
        json_path=Path(config.invocation_params.dir, json_path) if json_path else None,
        migrate=_value(config, "--workload-migrate"),
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
        f"{MARKER}(max_depth=0, perf_tolerance=None, record=True): record every module this "
        "test calls at top level, and its submodules down to max_depth, as workloads; "
        "perf_tolerance overrides --workload-perf-tolerance; record=False opts the test out of "
        "--workload-record=all",
    )
    config.stash[RECORD_ALL_KEY] = _value(config, "--workload-record") == "all"
    settings = _settings(config)
    if settings.snapshot and not config.pluginmanager.hasplugin("syrupy"):
        raise pytest.UsageError("--workload-snapshot needs the syrupy plugin, which is disabled")
    session = WorkloadSession(settings, CURRENT_SCHEME, _schemes(config))
    if settings.device != "auto":  # an explicit device must exist; auto never imports torch here
        try:
            session.device()
        except DeviceUnavailableError as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[SESSION_KEY] = session


def parse_mark(item: pytest.Item) -> WorkloadsMark | None:
    """Turn the closest ``workloads`` marker into a WorkloadsMark; bad ones are usage errors."""
    mark = item.get_closest_marker(MARKER)
    if mark is None:
        return None
    where = f"{item.nodeid}: @pytest.mark.{MARKER}"
    if mark.args:
        raise pytest.UsageError(f"{where} takes keyword arguments only, got {mark.args!r}")
    unknown = sorted(set(mark.kwargs) - set(_MARK_ARGUMENTS))
    if unknown:
        raise pytest.UsageError(
            f"{where} got unknown argument {', '.join(unknown)} (it takes "
            f"{', '.join(_MARK_ARGUMENTS)})"
        )
    max_depth = mark.kwargs.get("max_depth", 0)
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
        raise pytest.UsageError(f"{where}(max_depth=...) must be an int >= 0, got {max_depth!r}")
    tolerance = mark.kwargs.get("perf_tolerance")
    if tolerance is not None and (
        isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or tolerance < 0
    ):
        raise pytest.UsageError(
            f"{where}(perf_tolerance=...) must be a number >= 0, got {tolerance!r}"
        )
    record = mark.kwargs.get("record", True)
    if not isinstance(record, bool):
        raise pytest.UsageError(f"{where}(record=...) must be True or False, got {record!r}")
    return WorkloadsMark(max_depth, None if tolerance is None else float(tolerance), record)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    record_all = config.stash[RECORD_ALL_KEY]
    for item in items:
        mark = parse_mark(item)
        if mark is None and record_all:
            mark = WorkloadsMark()
        if mark is not None and mark.record:
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
    if request.config.pluginmanager.hasplugin("syrupy"):
        # also without the gate: a stored table is then kept as used, not deleted as unused
        item.stash[SNAPSHOT_KEY] = request.getfixturevalue("snapshot")
    yield recorder
    recorder.stop()


@pytest.fixture
def workloads(_workload_recording: WorkloadRecorder | None) -> WorkloadRecorder:
    """The test's workload recorder: ``workloads.track(model, max_depth=N)`` records a model
    in an unmarked test, ``workloads.workloads()`` returns what was recorded so far.

    Timings and FLOPs are measured after the test body, so they are not in what the test
    itself reads.
    """
    assert _workload_recording is not None
    return _workload_recording


@pytest.fixture(scope="session")
def workload_device(request: pytest.FixtureRequest) -> torch.device:
    """The ``torch.device`` chosen by ``--workload-device`` (auto: CUDA, else MPS, else CPU).

    Place models and inputs on it; workloads are timed on the device they run on.
    """
    return request.config.stash[SESSION_KEY].device()


def _record_properties(item: pytest.Item, session: WorkloadSession) -> None:
    test = session.test(item.nodeid)
    if test is not None:
        item.user_properties.extend(junit_properties(test))


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
        session.finish_test(recorder, item.stash.get(SNAPSHOT_KEY, None), passed=False)
        _record_properties(item, session)
        raise
    mark = item.stash.get(MARK_KEY, None)
    failures = session.finish_test(
        recorder,
        item.stash.get(SNAPSHOT_KEY, None),
        passed=True,
        tolerance=None if mark is None else mark.perf_tolerance,
    )
    _record_properties(item, session)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    return result


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    if hasattr(config, "workerinput"):
        return
    session = config.stash[SESSION_KEY]
    quiet = config.get_verbosity() < 0  # -q: no report, notes counted; problems still shown
    lines = [] if quiet else session.terminal_lines()
    if lines:
        terminalreporter.write_sep("=", "Workloads discovered")
        for line in lines:
            terminalreporter.write_line(line)
    if session.perf_notes and quiet:
        count = len(session.perf_notes)
        terminalreporter.write_line(
            f"{count} workload performance note{'s' if count > 1 else ''} (shown without -q)"
        )
    elif session.perf_notes:
        terminalreporter.write_sep("-", "workload performance")
        for note in session.perf_notes:
            terminalreporter.write_line(note)
    if session.notes:
        terminalreporter.write_sep("-", "workload snapshot migrations")
        for note in session.notes:
            terminalreporter.write_line(note)
    if session.problems:
        terminalreporter.write_sep("=", "workload problems across xdist workers", red=True)
        for problem in session.problems:
            terminalreporter.write_line(problem)


@pytest.hookimpl(wrapper=True)  # around syrupy's, which deletes unused snapshots
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
    config = session.config
    workload_session = config.stash[SESSION_KEY]
    stopped_early = session.shouldstop or session.shouldfail
    if (stopped_early or exitstatus == pytest.ExitCode.INTERRUPTED) and hasattr(
        config.option, "no_cleanup"
    ):
        # Tests that never ran did not use their snapshots: an update cut short must not
        # delete them (syrupy's own --snapshot-no-cleanup).
        config.option.no_cleanup = True
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[WORKER_OUTPUT_KEY] = workload_session.worker_payload()
    yield
    if workeroutput is None:
        if workload_session.check_across_workers() and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        workload_session.write_json(
            lambda report: config.hook.pytest_workload_update_json(config=config, report=report)
        )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node: Any = getattr(report, "node", None)  # on the xdist controller: the worker that ran it
    gateway = getattr(node, "gateway", None)
    if gateway is not None:
        node.config.stash[SESSION_KEY].ran_on(gateway.id, report.nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    # A crashed worker has no workeroutput at all.
    payload = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
    worker = getattr(node, "gateway", None)
    node.config.stash[SESSION_KEY].merge_worker_payload(getattr(worker, "id", "?"), payload)
