"""The runs `sweeper reproduce` builds from a published table's recorded settings."""

from __future__ import annotations

import dataclasses

import pytest

from sweeper.papers import table_runs
from sweeper.papers.outcome import ReproducedRow
from sweeper.papers.provenance import OPERATIONAL, run_settings
from sweeper.papers.table_runs import NotReproducible, plan, row_params, spec_for
from sweeper.results.paper_tables import row_metric
from tests.sweeper.papers.test_parameters import REFUSED
from trainables.reference.published import all_tables, published_table, table_rows


def test_ncgru_table_2_runs_each_published_row_at_its_settings() -> None:
    repro = plan("ncgru", "Table 2")
    assert repro.seeds == 3  # the paper's count
    assert [part.task_settings["T"] for part in repro.parts] == [200, 400]
    rows = {(row.label, row.reference.settings["T"]): row.params for row in repro.rows}
    assert len(rows) == 12
    ncgru = rows[("ncgru (orthogonal=rc)", 200)]
    assert ncgru["hidden_size"] == 118 and ncgru["rho"] == 50
    assert ncgru["neumann_order"] == 2 and ncgru["reset_interval"] == 50
    assert ncgru["optimizer"] == "adam" and ncgru["lr"] == 0.001 and ncgru["iterations"] == 10000
    assert ncgru["batch_size"] == 128 and ncgru["orthogonal"] == "rc"
    assert ncgru["init"] == "synthetic_code" and ncgru["task.variant"] == "paper"
    assert ncgru["orth_lr"] == 0.001  # the reading: A trained at the learning rate
    lstm = rows[("lstm", 400)]
    assert lstm["hidden_size"] == 90 and "init" not in lstm and "orth_lr" not in lstm


def test_stated_orthogonal_learning_rate_wins_over_the_reading() -> None:
    rows = {row.label: row.params for row in plan("ncgru", "Table 4", only={"T": 1000}).rows}
    assert rows["ncgru (orthogonal=c)"]["orth_lr"] == 0.0001
    assert rows["scornn"]["orth_lr"] == 0.0001
    assert rows["goru"]["orth_lr"] == 0.001


def test_epochs_become_the_readings_iterations() -> None:
    rows = plan("ncgru", "Table 3", only={"T": 200}).rows
    assert {row.params["iterations"] for row in rows} == {20000}  # 10 epochs x 100,000 / batch 50
    assert "iterations" in published_table("ncgru", "Table 3").readings


def test_three_layer_sizes_become_hidden_and_inner_sizes() -> None:
    rows = {row.model: row.params for row in plan("ncgru", "Table 5").rows}
    assert rows["ncgru"]["hidden_size"] == 430 and rows["ncgru"]["task.inner_hidden_size"] == 1000
    assert rows["ncgru"]["rho"] == 50 and rows["ncgru"]["task.layers"] == 3
    assert rows["ncgru"]["init"] == "ptb_code" and rows["ncgru"]["reset"] == "after"


def test_a_validation_and_a_test_number_share_their_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Table 4 itself is refused on its printed parameter counts (below); its rows, judged on their
    # peers' counts instead, are a table with a validation and a test number per model
    table = published_table("goru2019", "Table 4")
    labelled = dataclasses.replace(table, readings={**table.readings, "parameters": "equal hidden sizes"})
    monkeypatch.setattr(table_runs, "published_table", lambda paper, number: labelled)
    monkeypatch.setattr(table_runs, "STATED", "not a row setting")
    rows = plan("goru2019", "Table 4").rows
    assert len(rows) == 8
    for first, second in zip(rows[::2], rows[1::2], strict=True):
        assert second.runs_of == first.index and first.runs_of == first.index
    table = published_table("goru2019", "Table 4")
    assert [row_metric(table, row.reference) for row in rows[:2]] == ["valid_loss", "test_loss"]


def test_accuracy_tables_compare_accuracy_over_all_steps() -> None:
    for name in ("Table 8", "Table 9"):
        table = published_table("ncgru", name)
        assert table.metric == "valid_accuracy_all_steps" and table.take == "last"
        assert {ref.metric for ref in table_rows(table)} == {"accuracy_all_steps"}


@pytest.mark.parametrize(("paper", "table"), [("ncgru", "Table 6"), ("ncgru", "Table 7"), ("goru2019", "2")])
def test_tables_without_run_settings_say_why(paper: str, table: str) -> None:
    with pytest.raises(NotReproducible, match=r"cannot be run: \w+"):
        plan(paper, table)


def test_unknown_table_lists_the_tables() -> None:
    with pytest.raises(NotReproducible, match=r"the tables are: .*ncgru .Table 9."):
        plan("ncgru", "Table 12")


def test_every_runnable_table_builds_valid_specs() -> None:
    for table in runnable():
        repro = plan(table.paper, table.table)
        assert not repro.skipped, (table.key, repro.skipped)
        for part in repro.parts:
            spec = spec_for(repro, part, gpus=True)
            assert spec.reproduces is not None and spec.scheduler.name == "none"
            assert not spec.sampler.transfer  # its rows alone, whatever else the database holds
            assert set(spec.reproduces.rows) == {row.index for row in part.rows}


CONDITIONS = ("split", "accuracy", "seeds", "data")  # readings of what is measured, not of a setting


def runnable() -> list:
    return [table for table in all_tables() if table.not_runnable is None and table.key not in REFUSED]


def test_every_setting_of_every_run_is_the_papers_or_a_reading() -> None:
    """No run silently differs from its paper: each value of each row (defaults included) is stated
    where the table says, or read with a reason; a value that is neither refuses its row."""
    for table in runnable():
        repro = plan(table.paper, table.table)
        assert not repro.skipped, (table.key, repro.skipped)
        for row in repro.rows:
            names = [setting.name for setting in row.settings]
            assert len(names) == len(set(names)) and {"hidden_size", "lr", "iterations"} <= set(names)
            for setting in row.settings:
                assert setting.source in ("paper", "reading") and setting.why, (table.key, row.label, setting)
                assert setting.name not in OPERATIONAL


def test_a_value_that_is_neither_refuses_its_row() -> None:
    table = published_table("ncgru", "Table 2")
    ref = next(r for r in table_rows(table) if r.model == "scornn")
    unlabelled = dataclasses.replace(
        table, readings={k: v for k, v in table.readings.items() if k != "scornn.rho"}
    )
    with pytest.raises(ValueError, match=r"neither the paper's nor a reading: rho=50"):
        run_settings(unlabelled, ref, row_params(unlabelled, ref))


def test_every_reading_names_a_setting_the_runs_use_or_a_condition() -> None:
    for table in runnable():
        settings = [s for row in plan(table.paper, table.table).rows for s in row.settings]
        used = {s.key for s in settings if s.source == "reading"}
        for reading in table.readings:
            assert reading in used or reading in CONDITIONS, (table.key, reading)
        assert set(table.paper_settings) <= {s.key for s in settings if s.source == "paper"}, table.key


def settings_of(paper: str, number: str, model: str) -> dict:
    row = next(r for r in plan(paper, number).rows if r.model == model)
    return {s.name: s for s in row.settings}


@pytest.mark.parametrize(("number", "every"), [("Table 3", 100), ("Table 4", 50), ("Table 9", 50)])
def test_evaluation_intervals_are_the_papers(number: str, every: int) -> None:
    """The metric is a minimum over evaluations: the paper's grid, not a sparser one (§4.3, §4.4)."""
    for model in ("lstm", "ncgru"):
        setting = settings_of("ncgru", number, model)["eval_every"]
        assert setting.value == every and setting.source == "paper", setting


@pytest.mark.parametrize("number", ["Table 2", "Table 5", "Table 8"])
def test_scornns_d_is_a_reading_not_the_identity(number: str) -> None:
    setting = settings_of("ncgru", number, "scornn")["rho"]
    assert setting.value == 50 and setting.source == "reading" and setting.key == "scornn.rho"


def test_ptb_runs_the_papers_dropouts_and_reads_the_rest() -> None:
    """NC-GRU §4.5: all dropout coefficients 0.15; the reset interval and the embedding are readings."""
    ncgru = settings_of("ncgru", "Table 5", "ncgru")
    for name in ("task.embedding_dropout", "task.layer_dropout", "task.output_dropout"):
        assert ncgru[name].value == 0.15 and ncgru[name].source == "paper", name
    assert ncgru["reset_interval"].value == 100 and ncgru["reset_interval"].source == "reading"
    assert ncgru["task.embedding_size"].value == 430 and ncgru["task.embedding_size"].source == "reading"
    assert settings_of("ncgru", "Table 5", "lstm")["task.embedding_size"].value == 350
    assert len(plan("ncgru", "Table 5").parts) == 1  # per-model embeddings ride with each row's runs


def test_titles_say_what_is_measured_and_regenerated_graphs_say_so() -> None:
    assert published_table("ncgru", "Table 3").title == "Adding problem, minimum validation loss"
    assert "regenerated, not the paper's" in published_table("goru2019", "Table 3").readings["data"]


def test_smoke_profile_shrinks_every_run() -> None:
    repro = plan("ncgru", "2", profile="smoke", only={"T": 200})
    assert repro.seeds == 2
    for row in repro.rows:
        assert row.params["iterations"] == 40 and row.params["batch_size"] <= 16
        assert row.params["task.T"] == 10 and row.params["hidden_size"] <= 25
        assert row.params.get("rho", 0) <= row.params["hidden_size"]
    spec = spec_for(repro, repro.parts[0], gpus=False)
    assert spec.name == "ncgru-table-2-T200"  # named by the paper's length, not the shrunk one
    assert spec.per_model["ncgru"]["orthogonal"].choice == ("c", "rc")


def test_a_setting_without_counterpart_is_refused() -> None:
    table = published_table("ncgru", "Table 7")
    ref = next(r for r in table_rows(table) if r.model == "ncgru")
    with pytest.raises(ValueError, match="'epochs' has no counterpart"):
        row_params(published_table("ncgru", "Table 2"), ref)


def test_within_our_spread() -> None:
    ref = table_rows(published_table("ncgru", "Table 2"))[0]  # LSTM, 0.10367
    assert ReproducedRow(ref, "valid_loss", [0.100, 0.106], 0, 0).within is True
    assert ReproducedRow(ref, "valid_loss", [0.2, 0.21], 0, 0).within is False
    assert ReproducedRow(ref, "valid_loss", [0.1], 0, 0).within is None
