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


def _private_imports(path: Path, tree: ast.Module) -> list[str]:
    found = []
    for module, names in _imports(tree):
        if module.split(".")[0] == "syrupy":
            private = [p for p in [*module.split("."), *names] if _private(p)]
            found += [f"{path.name} imports {private} from {module}"] if private else []
    return found


def _private_reads(path: Path, tree: ast.Module) -> list[str]:
    """Private members a module that holds syrupy's objects reaches (its own excepted)."""
    if not _handles_syrupy(tree):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{path.name}:{node.lineno} reads {ast.unparse(node)}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
        ):
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
            hidden = [n for n in names if isinstance(n, str) and _private(n)]
            found += [f"{path.name}:{node.lineno} reaches {hidden} by name"] if hidden else []
    return found


def test_nothing_private_of_syrupy_is_imported_or_touched():
    trees = {path: _tree(path) for path in _modules()}
    holders = [path.name for path, tree in trees.items() if _handles_syrupy(tree)]
    # (the scan has something to read: the extension and the glue that hands syrupy over)
    assert "syrupy_ext.py" in holders and len(holders) >= 2, holders
    found = [
        line
        for path, tree in trees.items()
        for line in [*_private_imports(path, tree), *_private_reads(path, tree)]
    ]
    assert not found, found


@pytest.mark.parametrize(
    "source",
    [
        "from syrupy._private import x\n",
        "from syrupy.report import _hidden\n",
        "from syrupy.assertion import SnapshotAssertion\ndef f(a):\n    return a._extension\n",
        "import syrupy\ndef f(a):\n    return getattr(a, '_session')\n",
    ],
)
def test_the_syrupy_scan_can_fail(source: str):
    tree, path = ast.parse(source), Path("probe.py")
    assert _private_imports(path, tree) + _private_reads(path, tree)


def test_the_extension_overrides_only_public_members():
    automatic = set(vars(type("Bare", (SingleFileSnapshotExtension,), {})))  # abc's own
    extension = syrupy_ext.WorkloadSnapshotExtension
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


def _names_a_snapshot_file(path: Path, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text == ".workloads" or "__workload_snapshots__" in text:
                found.append(f"{path.name}:{node.lineno} names {text!r}")
    for module, names in _imports(tree):
        if module.endswith(("snapshot_files", "syrupy_ext")):
            leaked = SNAPSHOT_PATH_NAMES & set(names)
            found += [f"{path.name} imports {sorted(leaked)}"] if leaked else []
    return found


def test_no_other_package_names_a_snapshot_file():
    inside = [p for p in _modules() if p.is_relative_to(SNAPSHOT)]
    # (the names are in use where they belong, so the scan looks for real ones)
    assert any(_names_a_snapshot_file(p, _tree(p)) for p in inside)
    found = [
        line
        for path in _modules()
        if not path.is_relative_to(SNAPSHOT)
        for line in _names_a_snapshot_file(path, _tree(path))
    ]
    assert not found, found
