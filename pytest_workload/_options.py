"""Options, ini keys and the marker, parsed and validated once (the command line wins over the
ini file; a bad value is a usage error naming it)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from ._compile.health import BACKENDS
from ._core.errors import DeviceUnavailableError
from ._core.files import STDOUT
from ._core.text import Commands, one_line
from ._perf.baseline import BASELINE_DIRNAME, DEFAULT_TOLERANCE
from ._perf.device import check_device_spec
from ._report.summary import TREE_LINES, TREE_TESTS
from ._session import WorkloadSettings
from ._workload.timing import MIN_SAMPLES

MARKER = "workloads"
MARKER_HELP = (
    f"{MARKER}(max_depth=0, perf_tolerance=None, record=True, compile=None): record every module "
    "this test calls at top level, and its submodules down to max_depth, as workloads; "
    "perf_tolerance overrides --workload-perf-tolerance; record=False opts the test out of "
    "--workload-record=all; compile='eager' or 'aot_eager' compiles each new root after the "
    "test and gates its graph breaks and recompiles"
)


@dataclass(frozen=True)
class WorkloadsMark:
    max_depth: int = 0
    perf_tolerance: float | None = None
    record: bool = True
    #: False for a test recorded by ``--workload-record=all`` alone, which is never replayed.
    marked: bool = True
    compile: str | None = None


def _bound(positive: bool) -> str:
    return f"a finite number {'> 0' if positive else '>= 0'}"


def number(value: str, *, positive: bool = False) -> float:
    try:
        parsed = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not (math.isfinite(parsed) and (parsed > 0 if positive else parsed >= 0)):
        raise argparse.ArgumentTypeError(f"expected {_bound(positive)}, got {value!r}")
    return parsed


def _choice(*values: str) -> Callable[[str], str]:
    expected = ", ".join(map(repr, values[:-1])) + f" or {values[-1]!r}"

    def parse(value: str) -> str:
        if value not in values:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value!r}")
        return value

    return parse


def _path(value: str) -> str:
    if "\0" in value:
        raise argparse.ArgumentTypeError(f"expected a path, got {value!r} (a NUL character)")
    return value


def _directory(value: str) -> str:
    """An empty name would be the rootdir itself."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"expected a directory name, got {value!r}")
    return _path(value)


def _device(value: str) -> str:
    try:
        return check_device_spec(value)
    except DeviceUnavailableError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@dataclass(frozen=True)
class _Option:
    flag: str
    default: str
    parse: Callable[[str], object]
    metavar: str
    help: str

    @property
    def ini(self) -> str:
        """The option's dest and its ini key."""
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def setting(self) -> str:
        return self.ini.removeprefix("workload_")


#: Every option; a switch (``parse`` is ``bool``) takes no value and has a ``--no-...`` form.
OPTIONS = (
    _Option(
        "--workload-snapshot",
        "off",
        bool,
        "",
        "compare each test's workloads with its syrupy snapshot; fail on collapses, hash, key or "
        "FLOP changes, costs that grew, new or vanished workloads, and timing regressions",
    ),
    _Option(
        "--workload-accept-upgrade",
        "off",
        bool,
        "",
        "narrow --snapshot-update to snapshots whose change is only a library upgrade's "
        "(configuration text, attributes, class paths); refuse any change of parameters, "
        "children, inputs, FLOPs or computation; needs --workload-snapshot and "
        "--snapshot-update",
    ),
    _Option(
        "--workload-record",
        "marked",
        _choice("marked", "all"),
        "marked|all",
        "which tests record workloads: those with @pytest.mark.workloads or the workloads "
        "fixture, or every test (max_depth 0 unless a marker says otherwise; "
        "@pytest.mark.workloads(record=False) opts one out)",
    ),
    _Option(
        "--workload-json",
        "",
        _path,
        "PATH",
        "write every test's workloads to PATH as JSON (- for stdout)",
    ),
    _Option(
        "--workload-timing",
        "on",
        lambda v: _choice("on", "off")(v) == "on",
        "on|off",
        "time each top-level workload on its device; 'off' turns every timing off (hashes and "
        "FLOPs stay)",
    ),
    _Option(
        "--workload-report",
        "auto",
        _choice("auto", "tree", "summary"),
        "auto|tree|summary",
        "the terminal section: each test's tree of workloads, or counts only; 'auto' shows the "
        f"trees for at most {TREE_TESTS} recorded tests, each folded past {TREE_LINES} lines",
    ),
    _Option(
        "--workload-time-budget",
        "0.25",
        partial(number, positive=True),
        "SECONDS",
        "time spent timing one workload; past it, samples are sought up to the "
        f"{MIN_SAMPLES} a verdict needs until 10x this, where a timing stops (a workload cut "
        "short is not judged)",
    ),
    _Option(
        "--workload-session-budget",
        "",
        lambda v: number(v, positive=True) if v else None,  # the empty default: no bound
        "SECONDS",
        "time all timings of the session may take (each xdist worker's own): workloads with a "
        "timing baseline are always timed, the rest while the budget lasts; those left untimed "
        "are counted in the report and marked in the JSON",
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
        _choice("on", "off", "strict"),
        "on|off|strict",
        "with --workload-snapshot, fail on timing regressions against the baselines; with "
        "several xdist workers only 'strict' replays workloads for timing and judges them; "
        "'strict' also fails a timing the gate cannot judge; 'off' keeps every hash check",
    ),
    _Option(
        "--workload-perf-tolerance",
        str(DEFAULT_TOLERANCE),
        number,
        "FRACTION",
        "slowdown the drift gate allows (0.2 = 20%%), beyond the measured noise; a marker's "
        "perf_tolerance overrides it",
    ),
    _Option(
        "--workload-cost-tolerance",
        "0",
        number,
        "FRACTION",
        "growth of a counted cost (bytes, peak memory) the snapshot gate allows (0.05 = 5%%)",
    ),
    _Option(
        "--workload-baselines",
        BASELINE_DIRNAME,
        _directory,
        "DIR",
        "directory of the timing baselines, relative to the rootdir",
    ),
)


#: Options that decide which workloads a run records, on which device, and where their
#: baselines are: given on the command line, a hint's command repeats them.
_SELECTING = ("--workload-record", "--workload-device", "--workload-baselines")


def _commands(config: pytest.Config) -> Commands:
    """Run literally, a hint acts on what this run recorded, no more."""
    given_paths = config.args_source == pytest.Config.ArgsSource.ARGS
    words: list[str] = []
    for option, dest in (("-k", "keyword"), ("-m", "markexpr")):
        if config.getoption(dest):
            words += [option, config.getoption(dest)]
    for override in config.getoption("override_ini") or ():
        words += ["-o", override]
    given = ((o.flag, config.getoption(o.ini)) for o in OPTIONS if o.flag in _SELECTING)
    words += [f"{flag}={value}" for flag, value in given if value is not None]
    return Commands(tuple(words), tuple(config.args) if given_paths else ())


def read_settings(config: pytest.Config) -> WorkloadSettings:
    """Each setting from the command line if given (argparse checked it), else the ini key, else
    the default, each checked by the same parser: a bad one is a usage error in
    ``pytest_configure``, before any test runs. The JSON report's path is relative to where
    pytest was started."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        values[option.setting] = config.getoption(option.ini)
        if values[option.setting] is None:
            try:
                raw = config.getini(option.ini)
            except (ValueError, pytest.UsageError) as exc:  # a switch's names the value only
                raise pytest.UsageError(f"ini option {option.ini}: {exc}") from None
            try:
                values[option.setting] = option.parse(raw)
            except argparse.ArgumentTypeError as exc:
                raise pytest.UsageError(f"ini option {option.ini} = {raw!r}: {exc}") from None
    values["baselines"] = config.rootpath / values["baselines"]
    if values["json"] not in ("", STDOUT):
        values["json"] = Path(config.invocation_params.dir, values["json"])
    values["json"] = Path(values["json"]) if values["json"] else None
    settings = WorkloadSettings(
        **values,
        update=bool(config.getoption("update_snapshots", False)),
        workers=int(getattr(config, "workerinput", {}).get("workercount", 1)),
        rootdir=config.rootpath,
        commands=_commands(config),
    )
    flag, command = "--workload-accept-upgrade", settings.commands.accept_upgrade
    if settings.accept_upgrade and not settings.snapshot:
        raise pytest.UsageError(f"{flag} needs --workload-snapshot")
    if settings.accept_upgrade and not settings.update:
        raise pytest.UsageError(
            f"{flag} needs --snapshot-update: syrupy writes what it rewrites; run {command}"
        )
    return settings


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("workload", "workload fingerprints (pytest-workload)")
    for option in OPTIONS:
        how: dict[str, Any] = {"metavar": option.metavar, "type": option.parse}
        ini: dict[str, Any] = {"default": option.default}
        if option.parse is bool:  # a switch: --no-... turns an ini 'true' off
            how, ini = (
                {"action": argparse.BooleanOptionalAction},
                {"type": "bool", "default": False},
            )
        group.addoption(
            option.flag,
            default=None,
            help=f"{option.help} (default: {option.default or 'none'}; ini: {option.ini})",
            **how,
        )
        parser.addini(option.ini, f"default for {option.flag}", **ini)


def _is_tolerance(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return 0 <= value <= sys.float_info.max  # (not NaN, nor an int beyond a float's range)


#: Each marker argument: whether a value is valid, and what it must be.
_MARK_ARGUMENTS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "max_depth": (lambda v: type(v) is not bool and isinstance(v, int) and v >= 0, "an int >= 0"),
    "perf_tolerance": (lambda v: v is None or _is_tolerance(v), _bound(False)),
    "record": (lambda v: isinstance(v, bool), "True or False"),
    "compile": (lambda v: v is None or v in BACKENDS, " or ".join(map(repr, BACKENDS))),
}


def parse_mark(item: pytest.Item) -> WorkloadsMark | None:
    mark = item.get_closest_marker(MARKER)
    if mark is None:
        return None
    where = f"{one_line(item.nodeid)}: @pytest.mark.{MARKER}"
    if mark.args:
        raise pytest.UsageError(f"{where} takes keyword arguments only, got {mark.args!r}")
    unknown = sorted(set(mark.kwargs) - set(_MARK_ARGUMENTS))
    if unknown:
        raise pytest.UsageError(
            f"{where} got unknown argument {', '.join(unknown)} (it takes "
            f"{', '.join(sorted(_MARK_ARGUMENTS))})"
        )
    values = dict(mark.kwargs)
    for name, value in values.items():
        valid, expected = _MARK_ARGUMENTS[name]
        if not valid(value):
            raise pytest.UsageError(f"{where}({name}=...) must be {expected}, got {value!r}")
    if values.get("perf_tolerance") is not None:
        values["perf_tolerance"] = float(values["perf_tolerance"])
    return WorkloadsMark(**values)
