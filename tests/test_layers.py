"""The package's layers: each imports only from layers below it, and the data layer needs no
torch. These tests read the source, so a new module is covered as soon as it exists."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_workload"

#: Lowest first. A module may import from its own layer and from any layer before it.
LAYERS = (
    "_model",
    "_torch_internals",
    "_identity",
    "_measure",
    "_record",
    "_verdict",
    "_render",
    "_gate",
    "_session",
    "xdist",
    "hookspecs",
    "_options",
    "plugin",
    "__main__",
    "__init__",
)
#: Top-level modules that may import each other regardless of order (pytest glue and its CLI).
GLUE = {"_options", "plugin", "__main__", "__init__"}


def _layer(module: str) -> str:
    """``pytest_workload._model.files`` -> ``_model``; the package itself is ``__init__``."""
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


def test_every_module_belongs_to_a_layer():
    unknown = {_layer(_module_name(p)) for p in _modules()} - set(LAYERS)
    assert not unknown, f"modules outside every layer: {sorted(unknown)}; add them to LAYERS"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_only_from_its_layer_or_below(path: Path):
    own = _layer(_module_name(path))
    upward = [
        target
        for target in _imports(path)
        if _layer(target) in LAYERS
        and LAYERS.index(_layer(target)) > LAYERS.index(own)
        and not (own in GLUE and _layer(target) in GLUE)
    ]
    assert not upward, f"{path.relative_to(PACKAGE)} ({own}) imports from above: {upward}"


def test_the_layer_check_sees_an_upward_import(tmp_path: Path):
    # the rule above must be able to fail: a data-layer module importing the recorder
    bad = PACKAGE / "_model" / "__probe_upward.py"
    bad.write_text("from .._record.recorder import WorkloadRecorder\n", encoding="utf-8")
    try:
        targets = _imports(bad)
    finally:
        bad.unlink()
    assert targets == ["pytest_workload._record.recorder"]
    assert LAYERS.index(_layer(targets[0])) > LAYERS.index("_model")


def test_the_data_layer_imports_without_torch():
    modules = sorted(
        _module_name(p) for p in (PACKAGE / "_model").glob("*.py") if p.name != "__init__.py"
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


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_and_classes_stay_small(path: Path):
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= MODULE_LINES, f"{path.name}: over {MODULE_LINES} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            assert lines <= CLASS_LINES, f"{path.name}: class {node.name} has {lines} lines"


def _third_party(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return {name.split(".")[0] for name in names}


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_core_imports_no_pytest_and_syrupy_has_one_home(path: Path):
    own, used = _layer(_module_name(path)), _third_party(path)
    if own not in GLUE and own != "hookspecs":
        assert "pytest" not in used and "_pytest" not in used, f"{path.name} imports pytest"
    if path.name != "syrupy_ext.py" and own not in GLUE:
        assert "syrupy" not in used, f"{path.name} imports syrupy outside _gate/syrupy_ext.py"
