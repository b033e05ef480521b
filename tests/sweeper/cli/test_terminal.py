"""What the read commands print: tables that fit 80 columns (full detail under --wide), best
first with the winner marked, JSON that validates against its documented schema, the latest
sweep when none is named, and a partial sweep called partial."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml
from click.testing import CliRunner
from optuna.distributions import FloatDistribution

from sweeper.cli import main
from sweeper.results.json_docs import schemas_markdown
from sweeper.results.outputs import SCHEMAS
from sweeper.run.launch import create_sweep
from sweeper.spec.loading import parse_spec
from sweeper.spec.sweep import trial_config
from sweeper.store.database import Store
from sweeper.store.trial_record import CONFIG_ATTR, FINAL_METRICS_ATTR, SEED_ATTR
from tests.helpers import tiny_spec

pytestmark = pytest.mark.xdist_group("terminal")  # the module's sweep is built once, on one worker

ROOT = Path(__file__).parents[3]
# spec order puts lstm first; gru is best; goru's budget ran out before any trial finished
VALUES = {"lstm": (0.4, 0.3), "gru": (0.2, 0.1), "goru": ()}


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> str:
    return sweep_of(tmp_path_factory.mktemp("terminal"), "busy", VALUES)


def sweep_of(folder: Path, name: str, values: dict[str, tuple[float, ...]]) -> str:
    """A sweep whose studies hold these complete trials, in a SQLite database of its own."""
    spec = parse_spec(yaml.safe_dump(tiny_spec(name=name, models=tuple(values))), f"{name}.yaml")
    url = f"sqlite:///{folder / 'sweeper.db'}"
    store = Store(url)
    record = create_sweep(spec, store, f"sqlite:///{folder / 'mlflow.db'}", None, None, home=folder)
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        for number, value in enumerate(values[study_record.model]):
            lr = 0.001 * (number + 1)
            study.add_trial(
                optuna.trial.create_trial(
                    params={"lr": lr, "momentum_of_a_long_named_setting": 0.123456789},
                    distributions={
                        "lr": FloatDistribution(1e-3, 3e-2, log=True),
                        "momentum_of_a_long_named_setting": FloatDistribution(0.0, 1.0),
                    },
                    value=value,
                    intermediate_values={10: value + 0.1, 30: value},
                    user_attrs={
                        SEED_ATTR: number,
                        CONFIG_ATTR: trial_config(spec, study_record.model, {"lr": lr}, number),
                        FINAL_METRICS_ATTR: {"valid_loss": value, "parameters": 1234.0},
                    },
                )
            )
    store.dispose()
    return url


def invoke(storage: str, *args: str) -> str:
    result = CliRunner().invoke(main, list(args), env={"SWEEPER_STORAGE": storage, "COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.stdout


TABLES = [
    ["status"],
    ["summarize"],
    ["list"],
    ["report", "--no-figures"],
    ["models", "--hidden-size", "16"],
    ["tasks"],
]


@pytest.mark.parametrize("args", TABLES, ids=lambda a: a[0])
def test_every_table_fits_80_columns(storage: str, args: list[str], tmp_path: Path) -> None:
    out = ["--out", str(tmp_path)] if args[0] == "report" else []
    lines = invoke(storage, *args, *out).splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(line for line in lines if len(line) > 80)


def test_status_is_best_first_with_the_winner_marked_and_full_detail_under_wide(storage: str) -> None:
    narrow = invoke(storage, "status")
    rows = [line for line in narrow.splitlines() if line.startswith("│") and "model" not in line]
    assert [next(m for m in VALUES if f" {m}" in row) for row in rows] == ["gru", "lstm", "goru"]
    assert "gru ★" in rows[0] and "★" not in rows[1] + rows[2]
    assert "no complete trial: goru" in narrow and "best parameters" not in narrow
    wide = invoke(storage, "status", "--wide")
    assert "best parameters" in wide and "lr=0.002, momentum_of_a_long_named_setting=0.1235" in wide


def test_two_models_whose_names_begin_alike_stay_apart_at_80_columns(tmp_path: Path) -> None:
    url = sweep_of(tmp_path, "ablations", {"goru_noreset": (0.512345,), "goru_noupdate": (0.498765,)})
    for command in ("status", "summarize"):
        shown = invoke(url, command)
        assert "goru_noupdate ★" in shown and "goru_noreset " in shown and "goru_no…" not in shown
        assert "0.49877" in shown and "0.51235" in shown  # values whole too


# `confirm --json` trains on Ray: tests/sweeper/run/test_confirm.py validates it on the worker's head
@pytest.mark.parametrize("command", [c for c in SCHEMAS if c != "confirm"])
def test_json_validates_against_its_documented_schema(storage: str, command: str, tmp_path: Path) -> None:
    args = {"report": ["report", "--no-figures", "--out", str(tmp_path)]}.get(command, [command])
    output = SCHEMAS[command].model_validate_json(invoke(storage, *args, "--json"))
    # the versions `outputs.py` names: status and summarize 6, report 4, the others 1
    assert output.version == {"status": 7, "summarize": 7, "report": 5}.get(command, 1)
    if command == "status":
        assert output.odds.winner == "gru" and set(output.odds.p_best) == {"gru", "lstm"}
        assert output.odds.based_on == {"gru": "its best trial", "lstm": "its best trial"}
    if command in ("status", "summarize"):
        assert output.sweep == "busy-1" and output.winner == "gru"
        assert [s.model for s in output.studies] == ["gru", "lstm", "goru"]
        assert output.partial and output.missing == ["goru"]
        assert output.studies[0].best == 0.1 and output.studies[0].best_params["lr"] == 0.002
    if command == "report":
        assert {row["model"] for row in output.rows} == set(VALUES)
        assert output.odds.winner == "gru" and output.notes[0].startswith("P(gru is the true winner)")


def test_the_json_schemas_in_the_docs_are_current() -> None:
    assert (ROOT / "docs" / "json.md").read_text() == schemas_markdown(), (
        "run `python -m sweeper.results.json_docs > docs/json.md`"
    )


@pytest.mark.parametrize("command", ["summarize", "report", "export"])
def test_commands_that_take_a_sweep_default_to_the_latest(storage: str, command: str, tmp_path: Path) -> None:
    out = {  # the report's figures are no part of which sweep it reads
        "summarize": [],
        "report": ["--no-figures", "--out", str(tmp_path)],
        "export": ["--out", str(tmp_path)],
    }[command]
    named = invoke(storage, command, "busy-1", *out)
    assert invoke(storage, command, *out) == named


ABLATIONS = {
    "scornn": (0.56412,),
    "goru_noupdate": (0.49877,),
    "goru_noreset": (0.51235,),
    "ncgru": (0.50812,),
}
HEADERS = {
    "status": ("model", "best", "done", "pruned", "failed", "live", "budget", "time"),
    "summarize": ("model", "best", "parameters", "trials", "hyperparameters"),
    "list": ("name", "status", "task", "studies", "created", "elapsed", "experiment"),
    "report": ("model", "published", "ours", "difference", "parameters", "compute"),
}


def header_words(text: str) -> set[str]:
    """Every word of a rich table's header rows (between its top edge and the rule under them)."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    rule = next(i for i, line in enumerate(lines) if line.startswith("┡"))
    return {word for line in lines[top + 1 : rule] for cell in line.split("┃") for word in cell.split()}


@pytest.mark.parametrize("command", list(HEADERS))
def test_at_80_columns_every_header_keeps_its_words_whole(command: str, tmp_path: Path) -> None:
    """The names and values of an ablation sweep leave each column little room: a header wraps
    between its words or not at all, never inside one."""
    url = sweep_of(tmp_path, "ablations", ABLATIONS)
    out = ["--no-figures", "--out", str(tmp_path / "report")] if command == "report" else []
    shown = invoke(url, command, *out)
    assert max(len(line) for line in shown.splitlines()) <= 80, shown
    words = {word for header in HEADERS[command] for word in header.split()}
    assert words <= header_words(shown), shown


def test_confirmations_are_listed_best_first_with_the_leader_marked_at_80_columns(tmp_path: Path) -> None:
    from rich.console import Console

    from sweeper.results.retrained import confirmed
    from sweeper.results.tables import confirmation_table
    from tests.helpers import add_confirmations

    url = sweep_of(tmp_path, "ablations", ABLATIONS)
    store = Store(url)
    record = store.get_sweep("ablations-1")
    runs = {
        "scornn": {0: 0.56, 1: 0.57},
        "ncgru": {0: 0.50, 1: 0.52},
    }  # scornn registered first, ncgru better
    for study in record.studies:
        if study.model in runs:
            add_confirmations(
                store, study.id, runs[study.model], {"lr": 0.001, "momentum_of_a_long_named_setting": 0.5}
            )
    console = Console(width=80, record=True)
    console.print(confirmation_table(record, confirmed(store, record)))
    shown = console.export_text()
    store.dispose()
    rows = [
        line for line in shown.splitlines() if line.startswith("│") and ("ncgru" in line or "scornn" in line)
    ]
    assert "ncgru ★" in rows[0] and "scornn" in rows[-1] and "★" not in rows[-1]
    assert max(len(line) for line in shown.splitlines()) <= 80, shown
    assert {"model", "runs", "valid_loss", "test_loss", "trial", "and", "parameters"} <= header_words(shown)
