"""What can be swept and one run of it: models, tasks, data sets, and `sweeper train`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml

from sweeper.cli.common import (
    BadInput,
    Failed,
    json_option,
    print_tables,
    tracking_option,
    wide_option,
    writable_folder,
)


@click.group()
def data() -> None:
    """Data sets of the file-based tasks (PTB, WikiText-2, bAbI; TIMIT is local only)."""


@data.command()
@click.argument("task")
@click.option(
    "--data-dir", required=True, type=click.Path(path_type=Path), help="Folder to download and verify into."
)
def fetch(task: str, data_dir: Path) -> None:
    """Download TASK's public data set into --data-dir and verify it."""
    from trainables.data import DataError
    from trainables.data import fetch as fetch_data

    writable_folder(data_dir, "--data-dir")
    try:
        path = fetch_data(task, data_dir)
    except DataError as exc:
        raise BadInput(str(exc)) from None
    click.echo(f"{task}: data ready in {path}")


@click.command()
@click.option("--hidden-size", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--input-size", type=click.IntRange(min=1), default=10, show_default=True)
@wide_option
@json_option
def models(hidden_size: int, input_size: int, wide: bool, as_json: bool) -> None:
    """Registered models, where each is defined, its hyperparameters and its size at a hidden size;
    then the training settings every model shares."""
    from sweeper.results.json_outputs import dumped, hyperparameters
    from sweeper.results.outputs import Model, ModelCatalog
    from sweeper.results.tables import hyperparameter_table, model_table
    from trainables.catalog import load_all
    from trainables.hyperparams import TRAINING_HYPERPARAMS
    from trainables.registry import MODELS
    from trainables.sizing import model_parameters

    load_all()
    tables, listed = [], []
    for entry in MODELS:
        try:
            parameters = model_parameters(entry.name, input_size, hidden_size)
            count = f"{parameters:,}"
        except ValueError as exc:
            parameters, count = None, f"n/a ({exc})"
        tables.append(model_table(entry, count, input_size, hidden_size))
        listed.append(
            Model(
                name=entry.name,
                defined_in=entry.defined_in,
                description=entry.description,
                parameters=parameters,
                hyperparameters=hyperparameters(entry.all_hyperparams.values()),
            )
        )
    if as_json:
        training = hyperparameters(TRAINING_HYPERPARAMS)
        catalog = ModelCatalog(
            input_size=input_size, hidden_size=hidden_size, models=listed, training=training
        )
        click.echo(dumped(catalog))
        return
    tables.append(hyperparameter_table("shared by every model (training)", TRAINING_HYPERPARAMS))
    print_tables(tables, wide)


@click.command()
@wide_option
@json_option
def tasks(wide: bool, as_json: bool) -> None:
    """Registered tasks, where each is defined, and their settings."""
    from sweeper.results.json_outputs import dumped, task_output
    from sweeper.results.outputs import TaskCatalog
    from sweeper.results.tables import task_table
    from trainables.catalog import load_all
    from trainables.registry import TASKS

    load_all()
    if as_json:
        click.echo(dumped(TaskCatalog(tasks=[task_output(entry) for entry in TASKS])))
        return
    print_tables([task_table(entry) for entry in TASKS], wide)


def _parse_assignments(values: tuple[str, ...]) -> dict[str, Any]:
    parsed = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--set {item!r}: expected NAME=VALUE")
        parsed[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
    return parsed


@click.command()
@click.option("--task", help="Registered task name (default: the --init-from run's).")
@click.option("--model", help="Registered model name (default: the --init-from run's).")
@click.option("--set", "assignments", multiple=True, help="NAME=VALUE: a hyperparameter or a task setting.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda, cuda:1, ...")
@click.option(
    "--init-from",
    help="Continue from kept weights: a sweep trial's MLflow run id, or a folder `sweeper best` "
    "wrote. Its model, task and hyperparameters are the defaults; --set overrides them.",
)
@tracking_option
def train(
    task: str | None,
    model: str | None,
    assignments: tuple[str, ...],
    seed: int,
    device: str,
    init_from: str | None,
    tracking_uri: str | None,
) -> None:
    """Run one training run in this process, without Ray, printing metrics as it goes."""
    from trainables.data import DataError
    from trainables.train import (
        TrialConfig,
        TrialDiverged,
        TrialOutOfMemory,
        config_from_settings,
        settings_of,
    )
    from trainables.train import train as run_training

    weights, kept = _initial_weights(init_from, tracking_uri) if init_from else (None, {})
    task, model = task or kept.get("task"), model or kept.get("model")
    if task is None or model is None:
        raise BadInput("--task and --model are required (or --init-from, whose run names them)")
    try:
        same_network = kept.get("task") == task and kept.get("model") == model
        kept_settings = settings_of(kept.get("config", {})) if same_network else {}
        settings = {**kept_settings, **_parse_assignments(assignments)}
        config = config_from_settings(task, model, settings, seed, device)
        TrialConfig.from_mapping(config).check_runnable()
    except KeyError as exc:  # an unknown task or model, named with the registered ones
        raise BadInput(exc.args[0]) from None
    except ValueError as exc:
        raise BadInput(str(exc)) from None

    def report(step: int, metrics: dict[str, float | str]) -> None:
        shown = "  ".join(f"{k}={v}" if isinstance(v, str) else f"{k}={v:.5g}" for k, v in metrics.items())
        click.echo(f"step {step:>7}  {shown}")

    def early(step: int, loss: float, seconds: float) -> None:
        click.echo(f"step {step:>7}  train_loss={loss:.5g}  wall_time={seconds:.3g}")

    try:
        run_training(config, report, progress=early, initial_weights=weights)
    except (TrialDiverged, TrialOutOfMemory) as exc:
        raise Failed(f"the run stopped: {exc}") from None
    except DataError as exc:  # the task's files are not here: what to fetch, and from where
        raise BadInput(str(exc)) from None
    except ValueError as exc:  # weights of another network
        raise BadInput(f"--init-from {init_from}: {exc}") from None


def _initial_weights(init_from: str, tracking_uri: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The state dict and the details (model, task, settings, hyperparameters) of kept weights:
    a folder `sweeper best` wrote, or a trial run's, fetched from MLflow."""
    import tempfile

    from sweeper.results.kept_weights import kept_details, run_weights
    from sweeper.store.locations import default_tracking_uri

    with tempfile.TemporaryDirectory(prefix="sweeper-init-") as tmp:
        folder = Path(init_from)
        try:
            if not folder.is_dir():
                from mlflow.tracking import MlflowClient

                uri = tracking_uri or default_tracking_uri()
                folder = run_weights(MlflowClient(tracking_uri=uri), uri, init_from, Path(tmp) / "model")
            details = kept_details(folder)
            import mlflow.pytorch

            network = mlflow.pytorch.load_model(str(folder), map_location="cpu")
        except LookupError as exc:
            raise BadInput(f"--init-from {init_from}: {exc.args[0]}") from None
        except Exception as exc:  # an unknown run id, an unreachable tracking server
            raise BadInput(f"--init-from {init_from}: {type(exc).__name__}: {exc}") from None
    click.echo(
        f"initial weights: {details.get('model')} trial {details.get('trial')} of {details.get('study')} "
        f"({details.get('objective')} {details.get('value')})",
        err=True,
    )
    return network.state_dict(), details
