"""The best trial's trained network of each study, kept as an MLflow model on the trial's run.

A trial that runs to its end hands its network to the driver with its last report (a Tune
checkpoint); pruned and failed trials never get there. When that trial is its study's best so
far, the driver logs the network as a PyTorch-flavoured MLflow model linked to the trial's run,
with what it is (model, task and its settings, hyperparameters, objective) as metadata and as the
signature's parameters, and deletes the study's earlier best: one kept model per study, the
best's. `sweeper best` fetches them; `sweeper train --init-from` continues from one.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sweeper.results.kept_weights import METADATA_KEY, STUDY_TAG, TRIAL_TAG, WEIGHTS_TAG, study_models
from sweeper.run.tune.trial import FINAL_FILE


@dataclass(frozen=True)
class WeightsDetails:
    """What a kept network is: enough to rebuild it (`config`) and to say how good it was."""

    study: str
    model: str
    task: str
    hyperparameters: dict[str, Any]  # the searched ones, as the study sampled them
    config: dict[str, Any]  # the whole trial config `trainables.train.train` ran
    objective: str
    value: float
    trial: int


def final_weights_folder(checkpoint: Any) -> Path | None:
    """A private copy of the checkpoint's network (the checkpoint itself is deleted next), or None
    when the checkpoint holds no finished trial's network."""
    folder = Path(tempfile.mkdtemp(prefix="sweeper-weights-"))
    checkpoint.to_directory(str(folder))
    if (folder / FINAL_FILE).exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    return None


def signature(details: WeightsDetails) -> Any:
    """The model's parameters as an MLflow signature: each setting with the value it was trained with."""
    from mlflow.models.signature import ModelSignature
    from mlflow.types.schema import ParamSchema, ParamSpec

    settings = {"model": details.model, "task": details.task, **details.config.get("task_settings", {})}
    settings.update(details.hyperparameters)
    specs = [
        ParamSpec(name, _param_type(value), value)
        for name, value in settings.items()
        if _param_type(value) is not None
    ]
    return ModelSignature(inputs=None, outputs=None, params=ParamSchema(specs))


def _param_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    return None


@contextmanager
def _quiet(logger: str) -> Iterator[None]:
    previous = logging.getLogger(logger).level
    logging.getLogger(logger).setLevel(logging.ERROR)
    try:
        yield
    finally:
        logging.getLogger(logger).setLevel(previous)


def log_weights(client: Any, experiment_id: str, run_id: str, folder: Path, details: WeightsDetails) -> str:
    """Log the network in `folder` as the study's kept model, drop the study's earlier ones, and
    return the new model's id. Removes `folder`."""
    import mlflow.pytorch
    import torch
    from mlflow.entities import LoggedModelOutput, LoggedModelStatus

    try:
        network = torch.load(folder / FINAL_FILE, map_location="cpu", weights_only=False)
        model = client.create_logged_model(
            experiment_id,
            name=f"{details.model}-{details.trial}",
            source_run_id=run_id,
            tags={
                STUDY_TAG: details.study,
                TRIAL_TAG: str(details.trial),
                "model": details.model,
                "task": details.task,
            },
            params={k: str(v) for k, v in details.hyperparameters.items()},
            model_type="recurrent network",
        )
        local = folder / "model"
        with _quiet("mlflow.pytorch"):  # its caution about pickles, at every save: nothing to act on
            mlflow.pytorch.save_model(
                network,
                str(local),
                signature=signature(details),
                metadata={METADATA_KEY: asdict(details)},
                serialization_format="pickle",  # the whole module: its forward needs no example input
                pip_requirements=[f"torch=={torch.__version__.split('+')[0]}"],
            )
        client.log_model_artifacts(model.model_id, str(local))
        client.finalize_logged_model(model.model_id, LoggedModelStatus.READY)
        client.log_outputs(run_id, models=[LoggedModelOutput(model.model_id, step=0)])
        client.set_tag(run_id, WEIGHTS_TAG, model.model_id)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for earlier in study_models(client, experiment_id, details.study):
        if earlier.model_id != model.model_id:
            client.delete_logged_model(earlier.model_id)
            if earlier.source_run_id and earlier.source_run_id != run_id:
                client.delete_tag(earlier.source_run_id, WEIGHTS_TAG)
    return model.model_id
