"""Every results file names the machine its figures come from, or its script ran on
(`figures_file.machine`): a GPU or overheads figure is one run on one machine, and the README
compares figures only within one. The files written before their script named it are listed, each
until it is written again; the list only shrinks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks import figures_file
from sweeper.spec.trial_cost import machine_name

RESULTS = Path(__file__).parents[2] / "benchmarks" / "results"

# Written before their script named its machine: each names it when it is next written, and is
# then taken off this list (the test fails until it is). Add nothing here: a new results file
# names its machine from its first run.
NO_MACHINE_YET = {
    # replays written before `search_tables/replay.py` named its machine (its `replay_seconds` is
    # a timing): each names it when next replayed
    "search.json",
    "search-hidden.json",
    "search-algorithmic.json",
    "search-indep.json",
    "search-hidden-indep.json",
    "search-algorithmic-indep.json",
    "search-against.json",
    "search-clock.json",
    # their scripts name it now; to be written again from the replays above
    "search-side-by-side.json",
    # their scripts name it now; hours of replays or training to write again
    "search-tuning.json",
    "search-trained.json",
    "search-trained-clock.json",
    # its script names it now; about ten minutes of simulation on 2 cores to write again
    "confirm-calibration.json",
    # its script names it now; written again only beside the service's `sweeper/run/gpu_paces.json`,
    # the same fit (a refit elsewhere moves its figures in the ninth digit)
    "gpu-pace-rule.json",
    # their script names it now; to be written again on an otherwise idle machine: the trials'
    # seconds in their workers are wall time, which other processes on the cores inflate
    "price-smoke.json",
    "price-copying-smoke.json",
    "price-denoise-12.json",
}


def _names_its_machine(document: Any) -> bool:
    """Whether `document` holds a machine as `figures_file.machine` writes one, a GPU's by name."""
    if not isinstance(document, dict) or not isinstance(document.get("machine"), dict):
        return False
    machine = document["machine"]
    named = bool(machine.get("device")) and bool(machine.get("cpus"))
    return named and (not machine["device"].startswith("cuda") or bool(machine.get("gpu")))


def test_every_results_file_names_its_machine() -> None:
    files = {path.name: json.loads(path.read_text()) for path in RESULTS.glob("*.json")}
    unnamed = {name for name, document in files.items() if not _names_its_machine(document)}
    assert unnamed - NO_MACHINE_YET == set(), "a results file without its machine: write it with one"
    assert NO_MACHINE_YET - unnamed == set(), "names its machine now, or is gone: take it off the list"


def test_the_machine_names_the_cpu_by_its_model() -> None:
    machine = figures_file.machine("cpu")
    assert machine["device"] == "cpu" and machine["cpus"] >= 1
    assert machine["cpu"] == machine_name()  # /proc/cpuinfo's model name, not only "x86_64"


def test_the_command_is_written_as_typed_from_the_root_naming_no_folder_of_this_machine(monkeypatch) -> None:
    script = Path(figures_file.__file__).parent / "overheads" / "startup.py"
    monkeypatch.setattr("sys.argv", [str(script), "--runs", "7"])
    assert figures_file.command_line() == "python -m benchmarks.overheads.startup --runs 7"
    monkeypatch.setattr("sys.argv", ["-c", "--runs", "7"])
    assert figures_file.command_line() == "python -c --runs 7"
