"""A study's kept weights in MLflow: one READY PyTorch model per study, the best trial's, with
what it is as metadata and signature; a later best replaces it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from mlflow.tracking import MlflowClient

from sweeper.results.kept_weights import STUDY_TAG, TRIAL_TAG, WEIGHTS_TAG, kept_details, study_models
from sweeper.run.tracking.weights import WeightsDetails, log_weights
from sweeper.run.tune.trial import FINAL_FILE


def final_folder(tmp_path: Path, name: str, network: torch.nn.Module) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    torch.save(network, folder / FINAL_FILE)
    return folder


def details(trial: int, value: float, hidden: int = 5) -> WeightsDetails:
    config = {"task": "denoise", "model": "gru", "task_settings": {"T": 6}, "hidden_size": hidden, "lr": 0.01}
    return WeightsDetails(
        study="s-1/denoise/gru",
        model="gru",
        task="denoise",
        hyperparameters={"hidden_size": hidden, "lr": 0.01},
        config=config,
        objective="valid_loss",
        value=value,
        trial=trial,
    )


@pytest.fixture
def client(tmp_path: Path) -> tuple[MlflowClient, str]:
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    return client, client.create_experiment("s-1", artifact_location=(tmp_path / "artifacts").as_uri())


def test_the_best_trials_network_is_kept_as_a_pytorch_model_and_replaced_by_a_better_one(tmp_path, client):
    client, experiment = client
    first_run, second_run = (client.create_run(experiment).info.run_id for _ in range(2))
    first = torch.nn.GRU(3, 5)
    log_weights(client, experiment, first_run, final_folder(tmp_path, "a", first), details(0, 0.5))
    assert not (tmp_path / "a").exists()
    (kept,) = study_models(client, experiment, "s-1/denoise/gru")
    assert kept.status.name == "READY" and kept.source_run_id == first_run
    assert kept.tags[STUDY_TAG] == "s-1/denoise/gru" and kept.tags[TRIAL_TAG] == "0"
    assert kept.params == {"hidden_size": "5", "lr": "0.01"}
    assert client.get_run(first_run).data.tags[WEIGHTS_TAG] == kept.model_id
    assert [o.model_id for o in client.get_run(first_run).outputs.model_outputs] == [kept.model_id]

    second = torch.nn.GRU(3, 5)
    log_weights(client, experiment, second_run, final_folder(tmp_path, "b", second), details(1, 0.4))
    (kept,) = study_models(client, experiment, "s-1/denoise/gru")  # the earlier best is gone
    assert kept.source_run_id == second_run and kept.tags[TRIAL_TAG] == "1"
    assert WEIGHTS_TAG not in client.get_run(first_run).data.tags

    import mlflow.artifacts
    import mlflow.pytorch

    folder = Path(mlflow.artifacts.download_artifacts(kept.artifact_location, dst_path=str(tmp_path / "got")))
    loaded = mlflow.pytorch.load_model(str(folder))
    for name, tensor in second.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor)
    described = kept_details(folder)
    assert described["trial"] == 1 and described["value"] == 0.4 and described["config"]["hidden_size"] == 5
    mlmodel = yaml.safe_load((folder / "MLmodel").read_text())
    params = {p["name"]: p["default"] for p in yaml.safe_load(mlmodel["signature"]["params"])}
    assert params == {"model": "gru", "task": "denoise", "T": 6, "hidden_size": 5, "lr": 0.01}
