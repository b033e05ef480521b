"""The weights a sweep kept: each study's best trial's trained network, an MLflow model on the
trial's run (written by `sweeper.run.tracking.weights`). Finding and fetching them needs MLflow only."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STUDY_TAG = "sweeper.study"
TRIAL_TAG = "optuna.trial_number"
WEIGHTS_TAG = "weights.model_id"  # on the trial's run: the id of the model that holds its weights
METADATA_KEY = "sweeper"  # the MLmodel file's metadata holds what the network is under this key


def _no_progress_bars() -> None:
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


def study_models(client: Any, experiment_id: str, study: str) -> list[Any]:
    """The study's logged models, newest first (one once its sweep has finished writing)."""
    found = client.search_logged_models(
        [experiment_id],
        filter_string=f"tags.`{STUDY_TAG}` = '{study}'",
        order_by=[{"field_name": "creation_timestamp", "ascending": False}],
    )
    return list(found)


@dataclass
class Fetched:
    """One study's kept weights, or why it has none."""

    model: str
    trial: int | None = None
    value: float | None = None
    run_id: str | None = None
    folder: Path | None = None
    missing: str | None = None


def fetch_best(
    client: Any, tracking_uri: str, experiment_id: str, studies: list[tuple[str, str, int | None]], out: Path
) -> list[Fetched]:
    """Download each (model, study, best trial number)'s kept model to `out/<model>`: an MLflow
    model folder that `mlflow.pytorch.load_model` and `sweeper train --init-from` read. A folder
    is replaced only once its download is whole."""
    import mlflow.artifacts
    from mlflow.entities import LoggedModelStatus

    _no_progress_bars()
    fetched = []
    for model, study, best_trial in studies:
        kept = [m for m in study_models(client, experiment_id, study) if m.status == LoggedModelStatus.READY]
        if not kept:
            reason = "no trial finished" if best_trial is None else "its best trial kept no weights"
            fetched.append(Fetched(model, best_trial, missing=reason))
            continue
        chosen = kept[0]
        trial = int(chosen.tags[TRIAL_TAG]) if TRIAL_TAG in chosen.tags else None
        if best_trial is not None and trial != best_trial:
            fetched.append(
                Fetched(model, best_trial, missing=f"the kept weights are trial {trial}'s, not the best's")
            )
            continue
        target, partial = out / model, out / f".{model}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        downloaded = mlflow.artifacts.download_artifacts(
            artifact_uri=chosen.artifact_location, dst_path=str(partial), tracking_uri=tracking_uri
        )
        shutil.rmtree(target, ignore_errors=True)
        Path(downloaded).rename(target)
        shutil.rmtree(partial, ignore_errors=True)
        details = kept_details(target)
        fetched.append(Fetched(model, trial, details.get("value"), chosen.source_run_id, target))
    return fetched


def run_weights(client: Any, tracking_uri: str, run_id: str, out: Path) -> Path:
    """Download the weights kept on trial run `run_id` under `out` and return their folder; raise
    LookupError if the run kept none."""
    import mlflow.artifacts

    _no_progress_bars()
    run = client.get_run(run_id)
    model_id = run.data.tags.get(WEIGHTS_TAG)
    if model_id is None:
        raise LookupError(
            f"run {run_id} kept no weights: only the best finished trial of each study keeps them"
        )
    model = client.get_logged_model(model_id)
    downloaded = mlflow.artifacts.download_artifacts(
        artifact_uri=model.artifact_location, dst_path=str(out), tracking_uri=tracking_uri
    )
    return Path(downloaded)


def kept_details(folder: Path) -> dict[str, Any]:
    """What a fetched network is (model, task, settings, hyperparameters, the trial's config and
    objective), from its MLmodel file."""
    import yaml

    mlmodel = folder / "MLmodel"
    if not mlmodel.exists():
        raise LookupError(f"{folder} holds no MLflow model (no MLmodel file)")
    metadata = (yaml.safe_load(mlmodel.read_text()) or {}).get("metadata") or {}
    if METADATA_KEY not in metadata:
        raise LookupError(
            f"{folder}: its MLmodel file does not say which network it is (no '{METADATA_KEY}' metadata)"
        )
    return dict(metadata[METADATA_KEY])
