"""A search table of any registered task and model: one without a memoryless baseline and one
whose objective is maximised, recorded through `train`, grown by a model and by a task without
recording again what it holds, replayed with every task answered by its own rule; bad input
named and refused, the table untouched."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import record, replay
from benchmarks.search_tables import table as tables


@pytest.mark.slow
def test_a_table_of_any_task_and_model_records_grows_and_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "table"
    tiny = ["--table", str(folder), "--configs", "2", "--seeds", "1", "--jobs", "1"]
    new = ["--hidden-scale", "0.25", "--iterations", "4", "--eval-every", "2"]
    assert record.main([*tiny, *new, "--tasks", "parenthesis", "shortest_path", "--models", "gru"]) == 0
    table = tables.read(folder)
    assert table.tasks["parenthesis"].baseline is None  # no memoryless baseline
    assert (table.tasks["shortest_path"].objective, table.tasks["shortest_path"].mode) == (
        "valid_accuracy",
        "max",
    )
    assert (
        table.tasks["parenthesis"].settings["T"] == 100 and "T" not in table.tasks["shortest_path"].settings
    )
    sizes = [d["config"]["hidden_size"] for d in table.curves["parenthesis"]["gru"].designs]
    assert all(9 <= size <= 18 for size in sizes)  # the config's 35-70, a quarter
    first = {t: table.curves[t]["gru"].objective.copy() for t in table.curves}

    assert record.main([*tiny, "--models", "scornn"]) == 0  # grown by a model, on every task
    assert record.main([*tiny, "--tasks", "adding"]) == 0  # and by a task, with the table's models
    grown = tables.read(folder)
    assert {t: sorted(m) for t, m in grown.curves.items()} == {
        "parenthesis": ["gru", "scornn"],
        "shortest_path": ["gru", "scornn"],
        "adding": ["gru", "scornn"],
    }
    for task, objective in first.items():
        np.testing.assert_array_equal(grown.curves[task]["gru"].objective, objective)  # not recorded again
    assert grown.counts()["missing"] == 0 and grown.tasks["adding"].baseline == pytest.approx(1 / 6)

    capsys.readouterr()
    out = tmp_path / "search.json"
    args = ["--table", str(folder), "--work", str(tmp_path / "work"), "--seeds", "3", "--workers", "2"]
    assert replay.main([*args, "--trials", "2", "--strategies", "default", "race", "--out", str(out)]) == 0
    result = json.loads(out.read_text())["tasks"]
    assert set(result) == {"parenthesis", "shortest_path", "adding", "sizes"}
    for task, judged in result["sizes"].items():  # hidden sizes by third, the highest accuracy best
        assert judged["models"], task
        for model, row in judged["models"].items():
            values = [r["best"] for r in row["thirds"]]
            best = max(values) if task == "shortest_path" else min(values)
            assert result[task]["truth"]["best"][model] == pytest.approx(best), (task, model)
            assert set(row["spending"]) == {"random", "default", "race"}, (task, model)
            assert all(sum(shares.values()) == pytest.approx(1) for shares in row["spending"].values())
    accuracy = result["shortest_path"]["truth"]
    assert accuracy["winner"] == max(accuracy["best"], key=accuracy["best"].get)  # the highest wins
    # no baseline: a sweep names its leader once every model has completed a trial
    named = result["parenthesis"]["W=2"]["strategies"]["random"]["hours_first_named"]
    assert named["never"] == 0


def test_bad_input_exits_2_naming_it_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "table"
    base = ["--table", str(folder), "--configs", "1", "--seeds", "1", "--hidden-scale", "0.25", "--status"]
    assert record.main([*base, "--tasks", "ptb_char"]) == 2
    assert "task 'ptb_char' is not one whose data this machine generates" in capsys.readouterr().err
    assert record.main([*base, "--tasks", "denoise", "--models", "nosuch"]) == 2
    assert "model 'nosuch' is not registered" in capsys.readouterr().err
    assert not folder.exists()
    table = tables.Table(tables.Settings(hidden=None, hidden_scale=0.25), 1, {}, {}, {})
    from benchmarks.search_tables.design import extended

    extended(table, 1, 1, ["denoise"], ["gru"])
    tables.write(table, folder)
    written = (folder / tables.META).read_bytes()
    assert record.main(["--table", str(folder), "--hidden-scale", "0.5"]) == 2
    assert "hidden_scale: the table's 0.25, asked 0.5" in capsys.readouterr().err
    meta = json.loads(written)
    meta["tasks"]["denoise"]["settings"]["T"] = 50  # recorded at another sequence length
    (folder / tables.META).write_text(json.dumps(meta))
    written = (folder / tables.META).read_bytes()
    assert record.main(["--table", str(folder), "--configs", "2", "--models", "scornn"]) == 2
    assert "denoise: the table's task is" in capsys.readouterr().err
    assert (folder / tables.META).read_bytes() == written  # nothing half-written
