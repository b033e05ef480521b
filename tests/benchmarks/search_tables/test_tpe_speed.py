"""The benchmark of the replay's changes to Optuna: each strategy replayed without and with one,
its ratio written, a differing sweep an exit 1, Optuna left as it ships."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna._gp import batched_lbfgsb
from optuna.samplers._tpe import _truncnorm
from optuna.search_space import group_decomposed

from benchmarks.search_tables import batched_gp, fast_tpe, tpe_speed, uncopied
from tests.benchmarks.search_tables.synthetic import synthetic_table


@pytest.fixture(autouse=True)
def plain_after() -> None:
    yield
    fast_tpe.uninstall()
    uncopied.uninstall()
    batched_gp.install()


def _as_it_ships() -> bool:
    return (
        all(getattr(_truncnorm, name) is plain for name, plain in fast_tpe.PLAIN.items())
        and optuna.Study.tell is uncopied.PLAIN["tell"]
        and group_decomposed._GroupDecomposedSearchSpace.calculate is uncopied.PLAIN["calculate"]
        and batched_lbfgsb._greenlet_imports is batched_gp.BATCHED
    )


@pytest.mark.parametrize(
    ("speedup", "beneath"),
    [("fast_tpe", []), ("uncopied", ["fast_tpe"]), ("batched_gp", ["fast_tpe", "uncopied"])],
)
def test_writes_each_strategys_ratio_and_leaves_optuna_as_it_ships(
    tmp_path: Path, speedup: str, beneath: list[str]
) -> None:
    synthetic_table(tmp_path / "table")
    out = tmp_path / "speed.json"
    args = ["--table", str(tmp_path / "table"), "--strategies", "default", "--trials", "6", "--rounds", "1"]
    assert tpe_speed.main([*args, "--speedup", speedup, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data["strategies"]) == {"default"} and data["sweeps_per_side"] == 4
    assert data["speedup"] == speedup and data["beneath"] == beneath
    assert data["machine"]["device"] == "cpu"  # CPU-seconds are their machine's
    row = data["strategies"]["default"]
    assert row["ratio"] == pytest.approx(row["plain_cpu_s"] / row["fast_cpu_s"])
    assert _as_it_ships()


def test_each_side_installs_the_changes_beneath_the_one_measured() -> None:
    tpe_speed._side("uncopied", False)
    assert (
        _truncnorm._log_ndtr is fast_tpe.vectorized_log_ndtr and optuna.Study.tell is uncopied.PLAIN["tell"]
    )
    tpe_speed._side("uncopied", True)
    assert optuna.Study.tell is uncopied.tell
    tpe_speed._optuna_as_it_ships()
    tpe_speed._side("fast_tpe", True)
    assert (
        _truncnorm._log_ndtr is fast_tpe.vectorized_log_ndtr and optuna.Study.tell is uncopied.PLAIN["tell"]
    )


def test_a_sweep_that_differs_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synthetic_table(tmp_path / "table")
    monkeypatch.setitem(fast_tpe.FAST, "_log_ndtr", lambda a: fast_tpe.log_ndtr(a) * 1.05)
    monkeypatch.setitem(fast_tpe.TOLERANCE, "_log_ndtr", (1.0, 1.0))
    args = ["--table", str(tmp_path / "table"), "--strategies", "default", "--trials", "12", "--rounds", "1"]
    assert tpe_speed.main(args) == 1
    assert _as_it_ships()


def test_a_folder_without_a_table_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tpe_speed.main(["--table", str(tmp_path), "--out", str(tmp_path / "speed.json")]) == 2
    assert str(tmp_path) in capsys.readouterr().err and not (tmp_path / "speed.json").exists()
