"""The package's house: packages by feature over a small foundation. The foundation (core,
torch internals, record, fingerprint) imports no feature; a feature imports the foundation
and an earlier feature only through that feature's package (its ``__init__``, its public
surface), never its modules; the glue imports anything. These tests read the source, so a new
module is covered as soon as it exists."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_workload"

#: Lowest first; each part imports only the parts before it (and itself).
FOUNDATION = ("_core", "_torch_internals", "_compile", "_workload", "_fingerprint")
#: Lowest first; a feature imports only the features before it, and only their package.
FEATURES = ("_tracing", "_perf", "_snapshot", "_report", "_recording")
#: Top-level modules that wire the features into pytest and the CLI; they import anything.
GLUE = {"_session", "xdist", "hookspecs", "_options", "plugin", "__main__", "__init__"}


def _part(module: str) -> str:
    """``pytest_workload._core.files`` -> ``_core``; the package itself is ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def _imports(path: Path) -> list[str]:
    """Absolute names of the package modules ``path`` imports (type-only imports too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                found.append(".".join([*base, node.module] if node.module else base))
            elif node.module and node.module.startswith("pytest_workload"):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("pytest_workload")]
    return found


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _violations(path: Path) -> list[str]:
    own = _part(_module_name(path))
    if own in GLUE:
        return []
    bad = []
    for target in _imports(path):
        theirs = _part(target)
        if theirs == own:
            continue
        if own in FOUNDATION:
            allowed = theirs in FOUNDATION and FOUNDATION.index(theirs) < FOUNDATION.index(own)
        else:
            allowed = theirs in FOUNDATION or (
                theirs in FEATURES
                and FEATURES.index(theirs) < FEATURES.index(own)
                and target == f"pytest_workload.{theirs}"
            )
        if not allowed:
            bad.append(target)
    return bad


def test_every_module_has_a_place():
    unknown = {_part(_module_name(p)) for p in _modules()} - {*FOUNDATION, *FEATURES, *GLUE}
    assert not unknown, f"modules outside the house: {sorted(unknown)}; place them in the lists"


def test_imports_follow_the_feature_rule():
    bad = {str(p.relative_to(PACKAGE)): v for p in _modules() if (v := _violations(p))}
    assert not bad, f"imports against the feature rule: {bad}"


@pytest.mark.parametrize(
    ("where", "source", "bad"),
    [
        ("_core", "from .._perf import judge\n", True),  # the core imports no feature
        ("_perf", "from .._snapshot import compare_tables\n", True),  # a later feature
        ("_report", "from .._perf.baseline import judge\n", True),  # another feature's insides
        ("_report", "from .._perf import judge\n", False),  # an earlier feature's surface
        ("_report", "from .._core.files import read_text\n", False),
    ],
)
def test_the_feature_rule_can_fail(where: str, source: str, bad: bool):
    probe = PACKAGE / where / "__probe_rule.py"
    probe.write_text(source, encoding="utf-8")
    try:
        assert bool(_violations(probe)) is bad
    finally:
        probe.unlink()


def test_module_names_are_unique():
    names = Counter(p.stem for p in _modules() if p.name != "__init__.py")
    twice = sorted(name for name, count in names.items() if count > 1)
    assert not twice, f"module names used more than once: {twice}"


@pytest.mark.parametrize("package", FEATURES)
def test_a_feature_surface_never_shadows_its_modules(package: str):
    # ``from pytest_workload._tracing import tracer`` must give the module, not a function
    tree = ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8"))
    exported = {
        a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names
    }
    modules = {p.stem for p in (PACKAGE / package).glob("*.py")}
    assert not exported & modules, f"{package} exports names of its modules: {exported & modules}"


def test_the_core_and_the_record_import_without_torch():
    modules = sorted(
        _module_name(p)
        for package in ("_core", "_workload")
        for p in (PACKAGE / package).glob("*.py")
        if p.name != "__init__.py"
    )
    code = (
        "import sys, importlib\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "heavy = sorted(m for m in ('torch', 'pytest', 'numpy') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "print(len(" + repr(modules) + "))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(len(modules))


#: Size limits that keep each room readable: lines per module, lines per class.
MODULE_LINES, CLASS_LINES = 400, 250


def _too_big(name: str, source: str) -> list[str]:
    found = [f"{name}: over {MODULE_LINES} lines"] if source.count("\n") > MODULE_LINES else []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            found += [f"{name}: class {node.name} has {lines} lines"] if lines > CLASS_LINES else []
    return found


def _third_party(source: str) -> set[str]:
    tree = ast.parse(source)
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return {name.split(".")[0] for name in names}


#: The glue that talks to pytest (and to syrupy's fixture); everything else imports neither.
PYTEST_GLUE = {"_options", "plugin", "xdist", "__main__", "__init__"}


def _wrong_home(module: str, source: str) -> list[str]:
    own, used, found = _part(module), _third_party(source), []
    if own not in PYTEST_GLUE and own != "hookspecs" and used & {"pytest", "_pytest"}:
        found.append(f"{module} imports pytest")
    if not module.endswith(".syrupy_ext") and own not in PYTEST_GLUE and "syrupy" in used:
        found.append(f"{module} imports syrupy outside _snapshot/syrupy_ext.py")
    return found


def _eager_torch(module: str, source: str) -> list[str]:
    # a module-level import would make `import pytest_workload` load torch
    top = [n for n in ast.parse(source).body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in top if isinstance(n, ast.ImportFrom) and n.module}
    heavy = sorted(n for n in names if n.split(".")[0] in {"torch", "numpy"})
    return [f"{module} imports {heavy} at module level"] if heavy else []


#: The one module that knows what each device kind needs; the others ask it (``device_for``).
DEVICE_SEAM = "pytest_workload._perf.device"
_KIND_APIS = ("torch.cuda", "torch.mps", "torch.backends")


def _device_kind(module: str, source: str) -> list[str]:
    if module == DEVICE_SEAM:
        return []
    nodes = list(ast.walk(ast.parse(source)))
    named = {n.value for n in nodes if isinstance(n, ast.Constant) and n.value in ("cuda", "mps")}
    named |= {ast.unparse(n) for n in nodes if isinstance(n, ast.Attribute)} & set(_KIND_APIS)
    return [f"{module} names device kinds {sorted(named)} outside {DEVICE_SEAM}"] if named else []


#: The classes that write their JSON by hand (issue 35: serialisation declared once per type,
#: by the codec, from a record's fields), each for what the codec does not declare.
HAND_WRITTEN = {
    ("pytest_workload._core.codec", "Record"): "the codec itself",
    ("pytest_workload._workload.signature", "InputSignature"): "values read by their tags",
    ("pytest_workload._workload.workload", "TestWorkloads"): "rows checked against each other",
}


def _hand_written(module: str, source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and (module, node.name) not in HAND_WRITTEN:
            names = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            if names & {"to_dict", "from_dict"}:
                found.append(f"{module}.{node.name} writes its JSON by hand: declare its fields")
    return found


def test_every_module_is_small_lazy_and_in_its_home():
    found = []
    for path in _modules():
        module, source = _module_name(path), path.read_text(encoding="utf-8")
        found += _too_big(module, source) + _wrong_home(module, source)
        found += _eager_torch(module, source) + _device_kind(module, source)
        found += _hand_written(module, source)
    assert not found, found


@pytest.mark.parametrize(
    ("check", "module", "source"),
    [
        (_too_big, "pytest_workload._core.x", "x = 1\n" * (MODULE_LINES + 1)),
        (_too_big, "pytest_workload._core.x", "class A:\n" + "    x = 1\n" * CLASS_LINES),
        (_wrong_home, "pytest_workload._perf.x", "import pytest\n"),
        (_wrong_home, "pytest_workload._snapshot.diff", "from syrupy import x\n"),
        (_eager_torch, "pytest_workload._perf.x", "import torch.nn\n"),
        (_device_kind, "pytest_workload._perf.x", "def f(d):\n    return d.startswith('cuda')\n"),
        (_device_kind, "pytest_workload._tracing.x", "torch.mps.synchronize()\n"),
        (_hand_written, "pytest_workload._perf.x", "class A:\n    def to_dict(self): ...\n"),
    ],
)
def test_the_module_checks_can_fail(check: Any, module: str, source: str):
    assert check(module, source)
    assert not check(module, "def f():\n    import torch\n")


@pytest.mark.parametrize("scenario", ["match", "change", "update"])
def test_the_snapshot_gate_path_stays_short(scenario: str):
    """Issue 35 point 3, traced as ``benchmarks/gate_path.py`` traces it (docs/benchmarks.md,
    section 18): following the test's table from ``SnapshotGate.check``, a gated test, a
    changed one and an updated one each move between modules at most 15 times, and read the
    stored file once. (A helper's ``data == KEEP`` once made it 16: the table's ``__eq__``.)"""
    root = PACKAGE.parent
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "gate_path.py"), "--scenario", scenario],
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["moves"] <= 15, found["stops"]
    assert found["reads"] == 1
