"""The package's shape, checked where the code changes: import-linter's contracts (layers, what
reading results may import, no cycles), modules small enough to hold in one's head, no library's
private module imported, benchmarks that use only the public names of what they measure, and an
architecture document whose names exist and whose module list is the tree's."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
MAX_LINES = 400


def test_every_import_contract_is_kept() -> None:
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.skip("import-linter is not installed (the test extra installs it)")
    done = subprocess.run([lint, "--no-cache"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout


def test_no_module_is_over_400_lines() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for package in ("sweeper", "trainables", "benchmarks")
        for path in (ROOT / package).rglob("*.py")
    }
    assert len(sizes) > 100
    assert {path: lines for path, lines in sizes.items() if lines > MAX_LINES} == {}


def test_each_subpackage_says_what_it_owns_and_may_import() -> None:
    for package in ("cli", "papers", "run", "results", "spec", "store"):
        docstring = (ROOT / "sweeper" / package / "__init__.py").read_text()
        assert docstring.startswith('"""') and "import" in docstring.lower(), package


def _imports(path: Path) -> list[tuple[ast.AST, str, list[str]]]:
    """Every absolute import of a file: the node, the module, the names taken from it."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node, alias.name, []) for alias in node.names]
    return found


def _sources(*folders: str) -> list[Path]:
    return [path for folder in folders for path in (ROOT / folder).rglob("*.py")]


# the exceptions, a benchmark's and not the service's: the replay swaps two of TPE's arithmetic
# functions for SciPy's, checked against Optuna's own before it does (`install`), and skips the
# deep copy `Study.tell` returns; `tpe_speed` turns the GP sampler's batched optimization off to
# measure it; each is checked by replaying sweeps both ways
# (tests/benchmarks/search_tables/test_fast_tpe.py, test_uncopied.py, test_batched_gp.py)
PRIVATE_ALLOWED = {
    "benchmarks/search_tables/batched_gp.py: optuna._gp",  # its batched L-BFGS-B's greenlet guard
    "benchmarks/search_tables/fast_tpe.py: optuna.samplers._tpe",  # its _truncnorm
    "benchmarks/search_tables/uncopied.py: optuna.study._tell",  # tell without the copy
}


def test_no_module_imports_a_librarys_private_module() -> None:
    ours = ("sweeper", "trainables", "benchmarks", "tests")
    private = {
        f"{path.relative_to(ROOT)}: {module}"
        for path in _sources("sweeper", "trainables", "benchmarks")
        for _, module, _ in _imports(path)
        if module.split(".")[0] not in ours and any(part.startswith("_") for part in module.split(".")[1:])
    }
    assert private == PRIVATE_ALLOWED


# the library functions and classes replaced while something runs, each checked: the replay's
# (fast_tpe's against Optuna's own arithmetic, uncopied's against the source it was copied from,
# batched_gp's by its guard's own answer) and the service's two (Tune's actor reuse, said when it
# cannot apply and re-checked on every Ray upgrade: tests/sweeper/run/tune/test_patches.py; the
# interpreter's hook for an exception it cannot raise, Python's public one)
PATCHED_ALLOWED = {
    "sweeper/run/tune/patches.py: TuneController._maybe_reuse_cached_actor",
    "sweeper/run/tune/runtime.py: sys.unraisablehook",
    "benchmarks/search_tables/batched_gp.py: batched_lbfgsb._greenlet_imports",
    "benchmarks/search_tables/fast_tpe.py: setattr(_truncnorm)",
    "benchmarks/search_tables/uncopied.py: Study.tell",
    "benchmarks/search_tables/uncopied.py: group_decomposed._GroupDecomposedSearchSpace.calculate",
}


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` of an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def test_only_the_listed_library_functions_and_classes_are_patched() -> None:
    """Every assignment to a name of an imported library (`Study.tell = ...`, `setattr(module,
    ...)`), in the service, the trials and the benchmarks: private classes and functions replaced
    at run time are listed, with what checks each, not only private modules imported."""
    ours = ("sweeper", "trainables", "benchmarks", "tests")
    patched = set()
    for path in _sources("sweeper", "trainables", "benchmarks"):
        library = {
            alias.asname or alias.name.split(".")[0]
            for node, module, _ in _imports(path)
            if module.split(".")[0] not in ours
            for alias in node.names
        }
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                dotted = _dotted(target) if isinstance(target, ast.Attribute) else None
                if dotted and dotted.split(".")[0] in library:
                    patched.add(f"{path.relative_to(ROOT)}: {dotted}")
            calls = (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
            )
            if calls and isinstance(node.args[0], ast.Name) and node.args[0].id in library:
                patched.add(f"{path.relative_to(ROOT)}: setattr({node.args[0].id})")
    assert patched == PATCHED_ALLOWED


def test_the_benchmarks_use_only_public_names_of_the_service_and_the_trials() -> None:
    """What the benchmarks import from `sweeper` and `trainables`, and what they read of the
    modules they import, never starts with an underscore: they measure what a user can call."""
    private = []
    for path in _sources("benchmarks"):
        modules = set()
        for node, module, names in _imports(path):
            if module.split(".")[0] not in ("sweeper", "trainables"):
                continue
            private += [f"{path.name}: {module}.{name}" for name in names if name.startswith("_")]
            modules |= {alias.asname or alias.name.split(".")[-1] for alias in node.names}
        for node in ast.walk(ast.parse(path.read_text())):
            reads = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            if reads and node.value.id in modules and node.attr.startswith("_"):
                private.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert private == []


def test_the_architecture_document_names_only_modules_and_names_that_exist() -> None:
    """Every `sweeper.…` and `trainables.…` the document names is a module, or a name in one."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"\b((?:sweeper|trainables)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)", text))
    assert len(named) > 30
    missing = []
    for dotted in sorted(named):
        parts = dotted.split(".")
        value = importlib.import_module(parts[0])
        for depth, part in enumerate(parts[1:], start=2):
            if hasattr(value, part):
                value = getattr(value, part)
                continue
            try:
                value = importlib.import_module(".".join(parts[:depth]))
            except ModuleNotFoundError:
                missing.append(dotted)
                break
    assert missing == []


def _tree_modules() -> set[str]:
    """Every subpackage and module of `sweeper` and `trainables`, by dotted name; the two packages
    themselves and the `__main__` modules (the `python -m` commands) aside."""
    names = set()
    for package in ("sweeper", "trainables"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__main__":
                continue
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            if len(parts) > 1:
                names.add(".".join(parts))
    return names


def test_the_architecture_document_lists_every_module_of_the_tree_and_no_other() -> None:
    """A module a newcomer meets is in the document's list, one line saying what it holds, and a
    module that is gone is not: its lines ("- `sweeper.run.search.transfer`: ...") are compared
    with the tree both ways."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    listed = re.findall(r"^ *- `((?:sweeper|trainables)(?:\.\w+)+)`: \S", text, flags=re.MULTILINE)
    tree = _tree_modules()
    assert len(tree) > 100
    assert sorted(name for name in set(listed) if listed.count(name) > 1) == []
    assert sorted(tree - set(listed)) == [], "modules the document does not list"
    assert sorted(set(listed) - tree) == [], "modules the document lists that are not in the tree"
