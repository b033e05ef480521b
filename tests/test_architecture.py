"""The package's shape, checked where the code changes: import-linter's contracts (layers, what
reading results may import, no cycles) and modules small enough to hold in one's head."""

from __future__ import annotations

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
        for package in ("sweeper", "trainables")
        for path in (ROOT / package).rglob("*.py")
    }
    assert len(sizes) > 60
    assert {path: lines for path, lines in sizes.items() if lines > MAX_LINES} == {}


def test_each_subpackage_says_what_it_owns_and_may_import() -> None:
    for package in ("cli", "papers", "run", "results", "spec", "store"):
        docstring = (ROOT / "sweeper" / package / "__init__.py").read_text()
        assert docstring.startswith('"""') and "import" in docstring.lower(), package
