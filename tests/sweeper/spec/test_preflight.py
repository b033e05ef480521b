"""What would stop a sweep's trials is found before anything is written or started."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import sweeper.spec.preflight
from sweeper.cli import main
from tests.helpers import tiny_spec, write_spec


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("SWEEPER_STORAGE", "SWEEPER_TRACKING_URI", "SWEEPER_RAY_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def launch(*args: str):
    return CliRunner().invoke(main, ["launch", *args])


def test_missing_data_names_the_folder_the_files_the_fetch_command_and_the_manual_way(here: Path) -> None:
    spec = write_spec(here, tiny_spec(task={"name": "ptb_char", "settings": {"data_dir": "data/ptb"}}))
    for options in (["--dry-run"], []):
        result = launch(str(spec), *options)
        assert result.exit_code == 2, result.output
        assert "data: task 'ptb_char' needs 3 missing file(s) in 'data/ptb'" in result.output
        assert "ptb.char.train.txt" in result.output
        assert "sweeper data fetch ptb_char --data-dir data/ptb" in result.output
        assert (
            "Without network access here" in result.output and "copy the files into data/ptb" in result.output
        )
    assert not (here / "sweeps").exists()


def test_gpus_asked_for_where_there_are_none_are_found_by_the_dry_run(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweeper.spec.preflight, "local_gpus", lambda: 0)
    spec = write_spec(here, tiny_spec(resources={"gpus": 0.5}))
    result = launch(str(spec), "--dry-run")
    assert result.exit_code == 2
    assert "resources: the trials ask for GPUs (0.5 for lstm, gru)" in result.output
    assert "add --no-gpus" in result.output
    # the price a GPU cluster would charge is printed all the same, beside the word that it stops here
    assert "price (an NVIDIA H200's paces at this spec's sizes, for GPUs this machine lacks" in result.output
    assert "GPU-hours" in result.output and "preflight: would stop here" in result.output
    assert launch(str(spec), "--dry-run", "--no-gpus").exit_code == 0
    assert launch(str(spec), "--dry-run", "--address", "auto").exit_code == 0  # a cluster's GPUs are its own


def test_an_unreachable_database_is_found_by_the_dry_run(here: Path) -> None:
    spec = write_spec(here, tiny_spec())
    result = launch(str(spec), "--dry-run", "--storage", "postgresql+psycopg2://nobody@127.0.0.1:9/none")
    assert result.exit_code == 2 and "cannot use storage" in result.output


def test_local_gpus_reads_what_nvidia_smi_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweeper.spec.preflight.shutil, "which", lambda name: None)
    assert sweeper.spec.preflight.local_gpus() == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert sweeper.spec.preflight.local_gpus() == 0
