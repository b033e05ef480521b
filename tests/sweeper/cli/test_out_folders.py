"""Every folder a command writes into is checked before anything is written: one that cannot be
made or written is a one-line error naming it, exit 2, and nothing is left half-written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sweeper.cli import main
from sweeper.run.launch import create_sweep
from sweeper.spec.loading import parse_spec
from sweeper.store.database import Store
from tests.helpers import tiny_spec


@pytest.fixture(scope="module")
def registered(tmp_path_factory) -> tuple[str, Path]:
    """A registered sweep (nothing trained): its storage URL, and a file where a folder is asked."""
    folder = tmp_path_factory.mktemp("registered")
    store = Store(f"sqlite:///{folder / 'sweeper.db'}")
    spec = parse_spec(yaml.safe_dump(tiny_spec()), "t.yaml")
    create_sweep(spec, store, f"sqlite:///{folder / 'mlflow.db'}", None, None, home=folder)
    store.dispose()
    (folder / "a-file").write_text("not a folder")
    return f"sqlite:///{folder / 'sweeper.db'}", folder


@pytest.mark.parametrize(
    "command",
    [["export", "--out"], ["report", "--no-figures", "--out"], ["best", "--out"]],
    ids=lambda c: c[0],
)
@pytest.mark.parametrize(
    "where", ["/proc/forbidden/out", "{folder}/a-file/out"], ids=["proc", "under-a-file"]
)
def test_an_output_folder_that_cannot_be_made_is_one_line_and_exit_2(registered, command, where) -> None:
    storage, folder = registered
    out = where.format(folder=folder)
    result = CliRunner().invoke(main, [*command, out, "--storage", storage])
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith(f"error: --out {out}: cannot make this folder")
    assert "Traceback" not in result.output and not Path(out).exists()


def test_a_data_folder_that_cannot_be_made_is_one_line_and_exit_2(registered) -> None:
    _, folder = registered
    result = CliRunner().invoke(main, ["data", "fetch", "ptb_char", "--data-dir", f"{folder}/a-file/data"])
    assert result.exit_code == 2 and result.output.startswith(f"error: --data-dir {folder}/a-file/data:")
