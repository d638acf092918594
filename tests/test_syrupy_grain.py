"""syrupy along its grain, read from the source: the package imports nothing private from
syrupy, touches no private member of the objects it gets from syrupy, overrides only public
extension points, and writes a workload snapshot only from its extension's
``write_snapshot_collection``, when syrupy asks it to."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension

import pytest_workload
from pytest_workload._snapshot import syrupy_ext

PACKAGE = Path(pytest_workload.__file__).parent
SNAPSHOT = PACKAGE / "_snapshot"
#: Calls that write, move or delete a file, by their name (``path.unlink()``) or from
#: ``os`` and ``shutil`` (``os.replace``).
WRITERS = frozenset(
    {"write_text_atomic", "write_text", "write_bytes", "open", "fdopen", "mkstemp", "unlink"}
    | {"rename", "rmdir"}
)
OS_WRITERS = frozenset({"replace", "remove", "removedirs", "move", "copy", "copyfile", "rmtree"})
#: Where the extension writes, when syrupy calls it.
WRITER = ("WorkloadSnapshotExtension", "write_snapshot_collection")
#: The names that lead to a snapshot file: only the snapshot package uses them.
SNAPSHOT_PATH_NAMES = frozenset({"SNAPSHOT_DIRNAME", "SNAPSHOT_SUFFIX", "snapshot_stem"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(tree: ast.Module) -> list[tuple[str, list[str]]]:
    """(module, imported names) of every import, lazy ones included; relative ones resolved
    only as far as their last part (``.syrupy_ext`` -> ``syrupy_ext``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", [a.name for a in node.names]))
    return found


def _handles_syrupy(tree: ast.Module) -> bool:
    """The module imports syrupy, or the module that talks to it."""
    return any(
        module.split(".")[0] == "syrupy" or module.endswith("syrupy_ext") or "syrupy_ext" in names
        for module, names in _imports(tree)
    )


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_private_is_imported_from_syrupy(path: Path):
    for module, names in _imports(_tree(path)):
        if module.split(".")[0] != "syrupy":
            continue
        private = [p for p in [*module.split("."), *names] if _private(p)]
        assert not private, f"{path.name} imports {private} from {module}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_holding_syrupy_objects_touches_no_private_member(path: Path):
    tree = _tree(path)
    if not _handles_syrupy(tree):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            own = isinstance(owner, ast.Name) and owner.id in ("self", "cls")
            assert own, f"{path.name}:{node.lineno} reads {ast.unparse(node)}"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
        ):
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
            hidden = [n for n in names if isinstance(n, str) and _private(n)]
            assert not hidden, f"{path.name}:{node.lineno} reaches {hidden} by name"


def test_the_extensions_override_only_public_members():
    automatic = set(vars(type("Bare", (SingleFileSnapshotExtension,), {})))  # abc's own
    for extension in (syrupy_ext.WorkloadSnapshotExtension, syrupy_ext.KeptSnapshotExtension):
        overridden = [
            name
            for name in set(vars(extension)) - automatic
            if hasattr(SingleFileSnapshotExtension, name) and _private(name)
        ]
        assert not overridden, f"{extension.__name__} overrides syrupy's {overridden}"


def _writes(tree: ast.Module) -> list[tuple[tuple[str, ...], int, str]]:
    """(enclosing classes and functions, line, callee) of each call that writes."""
    found = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                inner = (*scope, child.name)
            if isinstance(child, ast.Call):
                name = ast.unparse(child.func).split(".")
                if name[-1] in WRITERS or (name[0] in ("os", "shutil") and name[-1] in OS_WRITERS):
                    found.append((scope, child.lineno, name[-1]))
            visit(child, inner)

    visit(tree, ())
    return found


def test_a_workload_snapshot_is_written_only_when_syrupy_asks_the_extension():
    writes = [
        (path.name, scope, name)
        for path in sorted(SNAPSHOT.rglob("*.py"))
        for scope, _, name in _writes(_tree(path))
    ]
    assert writes == [("syrupy_ext.py", WRITER, "write_text_atomic")], writes


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_other_package_names_a_snapshot_file(path: Path):
    if path.is_relative_to(SNAPSHOT):
        return
    tree = _tree(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            assert text != ".workloads" and "__workload_snapshots__" not in text, path.name
    for module, names in _imports(tree):
        if module.endswith(("snapshot_files", "syrupy_ext")):
            leaked = SNAPSHOT_PATH_NAMES & set(names)
            assert not leaked, f"{path.name} imports {sorted(leaked)}"
