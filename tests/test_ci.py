"""CI runs the README's two commands in one checkout, in order; the second is not broken by what
the first leaves behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def readme(main: str, test: str) -> str:
    return f"<!-- main-command -->\n```bash\n{main}\n```\n\n<!-- test-command -->\n```bash\n{test}\n```\n"


def with_ci(folder: Path) -> Path:
    """`folder` holding a copy of .ci/run, which runs the README written there."""
    (folder / ".ci").mkdir()
    return Path(shutil.copy(ROOT / ".ci" / "run", folder / ".ci" / "run"))


def test_ci_runs_the_main_command_then_the_test_command(tmp_path: Path) -> None:
    with_ci(tmp_path)
    (tmp_path / "README.md").write_text(readme("echo main >> order.txt", "echo test >> order.txt"))
    done = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "order.txt").read_text() == "main\ntest\n"

    (tmp_path / "README.md").write_text(readme("false", "echo test >> order.txt"))
    failed = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True, text=True)
    assert failed.returncode != 0 and (tmp_path / "order.txt").read_text() == "main\ntest\n"


def test_the_test_command_finds_what_the_main_command_printed(tmp_path: Path) -> None:
    """The README's main command's test reads the output CI kept (`SWEEPER_README_MAIN_RUN`)
    instead of running its sweep again; the output is still shown as it comes."""
    with_ci(tmp_path)
    main = "echo out; echo err >&2; echo more out"
    test = (
        'cat "$SWEEPER_README_MAIN_RUN/stdout" > seen.txt; cat "$SWEEPER_README_MAIN_RUN/stderr" >> seen.txt'
    )
    (tmp_path / "README.md").write_text(readme(main, test))
    done = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "seen.txt").read_text() == "out\nmore out\nerr\n"
    assert "out\nmore out\n" in done.stdout and "err\n" in done.stderr


def path_without(folder: Path, missing: tuple[str, ...], stubs: dict[str, str]) -> str:
    """A PATH of one folder: every command this one's PATH finds but the `missing`, and the `stubs`
    (name → shell script) in place of theirs."""
    folder.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        for command in Path(directory).glob("*") if Path(directory).is_dir() else ():
            linked = folder / command.name
            if command.name not in missing and not linked.exists() and os.access(command, os.X_OK):
                linked.symlink_to(command)
    for name, script in stubs.items():
        (folder / name).unlink(missing_ok=True)
        (folder / name).write_text(f"#!/bin/sh\n{script}\n")
        (folder / name).chmod(0o755)
    return str(folder)


def test_ci_installs_chromium_only_where_it_is_missing(tmp_path: Path) -> None:
    """The browser tests need Debian's Chromium: CI installs it without asking, and a machine that
    has it installs nothing."""
    with_ci(tmp_path)
    (tmp_path / "README.md").write_text(readme("echo main", "echo test"))
    asked = tmp_path / "apt-get.txt"
    apt_get = {"apt-get": f'echo "$DEBIAN_FRONTEND $*" >> {asked}'}
    for where, has_chromium in (("without", False), ("with", True)):
        stubs = {**apt_get, **({"chromium": "exit 0"} if has_chromium else {})}
        path = path_without(tmp_path / where, ("chromium", "apt-get"), stubs)
        done = subprocess.run(
            ["bash", str(tmp_path / ".ci" / "run")],
            env={**os.environ, "PATH": path},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.endswith("+ echo test\ntest\n")  # and the README's commands ran after it
    assert asked.read_text() == (  # once, on the machine without it
        "noninteractive update -qq\n"
        "noninteractive install -y -qq --no-install-recommends chromium fonts-liberation\n"
    )


def _sources_only(folder: str, names: list[str]) -> list[str]:
    """What the copy leaves out: caches, and the benchmarks' recorded results (not `sweeper/results`,
    the read side the benchmarks import)."""
    return [
        n for n in names if n == "__pycache__" or (n == "results" and Path(folder) == ROOT / "benchmarks")
    ]


def test_the_lint_passes_with_the_folder_the_main_command_writes(tmp_path: Path) -> None:
    """`./sweeps/` must not make ruff take a benchmark's sibling import for first-party code."""
    for name in ("benchmarks", "sweeper", "trainables", "pyproject.toml"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=_sources_only)
        else:
            shutil.copy(source, tmp_path / name)
    (tmp_path / "tests").mkdir()
    (tmp_path / "sweeps").mkdir()
    done = subprocess.run(
        ["ruff", "check", "--no-cache", "benchmarks"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_tests_marked_to_share_a_worker_run_on_one(tmp_path: Path) -> None:
    """The suite's shared sweeps are built once because `--dist loadgroup` keeps the tests of one
    `xdist_group` on one worker; a pytest and pytest-xdist that stop agreeing on it split them
    silently, each worker building the sweep again."""
    for module in ("a", "b"):
        (tmp_path / f"test_{module}.py").write_text(
            "import os, pathlib, pytest\n"
            "@pytest.mark.xdist_group('shared')\n"
            "@pytest.mark.parametrize('i', range(4))\n"
            "def test_it(i):\n"
            "    (pathlib.Path(os.environ['RAN_ON']) / os.environ['PYTEST_XDIST_WORKER']).touch()\n"
        )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    ran_on = tmp_path / "ran-on"
    ran_on.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={**os.environ, "RAN_ON": str(ran_on)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list(ran_on.iterdir())) == 1, sorted(p.name for p in ran_on.iterdir())
