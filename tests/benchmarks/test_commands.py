"""The benchmarks' commands as the READMEs and docs write them: every `python -m benchmarks.…`
names a module that exists and runs as a script, every benchmark path named exists, and the
benchmarks README's tables list every script of every room under that room's heading. The
results' JSON files say which command wrote them: each names a script that exists today."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
ROOMS = ("gpu", "overheads", "search_tables")


def _texts() -> dict[str, str]:
    documents = [ROOT / "README.md", *ROOT.glob("*/README.md"), *(ROOT / "docs").glob("*.md")]
    sources = [
        p for package in ("sweeper", "trainables", "benchmarks") for p in (ROOT / package).rglob("*.py")
    ]
    return {str(p.relative_to(ROOT)): p.read_text() for p in [*documents, *sources]}


def test_every_benchmark_command_names_a_module_that_runs_as_a_script() -> None:
    named = {
        (where, module)
        for where, text in _texts().items()
        for module in re.findall(r"python -m (benchmarks(?:\.\w+)+)", text)
    }
    assert len({module for _, module in named}) >= 20
    broken = []
    for where, module in sorted(named):
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None or "__main__" not in Path(spec.origin).read_text():
            broken.append(f"{where}: {module}")
    assert broken == []


def test_every_benchmark_path_named_exists() -> None:
    missing = [
        f"{where}: {path}"
        for where, text in _texts().items()
        for path in re.findall(r"\bbenchmarks/[\w/]+\.py\b", text)
        if not (ROOT / path).exists() and not (ROOT / "tests" / path).exists()
    ]
    assert missing == []


def test_the_benchmarks_readme_lists_every_script_under_its_room() -> None:
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    sections = re.split(r"^\*\*`(\w+)/`\*\*", readme, flags=re.MULTILINE)
    listed = {
        room: set(re.findall(rf"^\| `{room}/(\w+)\.py`", body, re.MULTILINE))
        for room, body in zip(sections[1::2], sections[2::2], strict=True)
    }
    assert set(listed) == set(ROOMS)
    for room in ROOMS:
        scripts = {p.stem for p in (ROOT / "benchmarks" / room).glob("*.py") if "__main__" in p.read_text()}
        assert scripts, room
        assert listed[room] == scripts, room


def _names_a_script(command: str) -> bool:
    """`python -m benchmarks.X.Y` and `python benchmarks/….py` name a file that exists; `sweeper …`
    is the CLI, taken as it is."""
    words = command.split()
    if words[0] == "sweeper":
        return True
    if words[:2] == ["python", "-m"]:
        module = words[2]
        return module.startswith("benchmarks.") and (ROOT / f"{module.replace('.', '/')}.py").exists()
    return words[0] == "python" and words[1].startswith("benchmarks/") and (ROOT / words[1]).exists()


def test_every_results_command_names_a_script_that_exists() -> None:
    results = ROOT / "benchmarks" / "results"
    commands = {}
    for path in sorted([*results.glob("*.json"), *results.glob("*/*.json")]):
        document = json.loads(path.read_text())
        if isinstance(document, dict) and "command" in document:
            commands[str(path.relative_to(ROOT))] = document["command"]
    assert len(commands) >= 20
    assert [
        f"{where}: {command}" for where, command in commands.items() if not _names_a_script(command)
    ] == []


def test_a_results_command_of_a_moved_script_is_caught() -> None:
    assert _names_a_script("python -m benchmarks.gpu.cells --device cuda")
    assert _names_a_script("sweeper launch configs/denoise.yaml --profile smoke")
    assert not _names_a_script("python benchmarks/cells.py --device cuda")
    assert not _names_a_script("python -m benchmarks.blackbox.replay --out FILE")
    assert not _names_a_script("python startup.py --runs 5")
