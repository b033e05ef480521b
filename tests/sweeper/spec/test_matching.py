"""Parameter matching: every model lands within 2% of the budget, counted on the real network."""

from __future__ import annotations

import pytest
import torch
import yaml

from sweeper.spec.loading import SpecError, parse_spec
from sweeper.spec.matching import resolve_matching
from sweeper.spec.values import Match
from tests.helpers import tiny_spec
from trainables.catalog import load_all
from trainables.registry import MODELS, TASKS
from trainables.sizing import count_parameters, hidden_size_for_budget, network_parameters
from trainables.train import TrialConfig, build

load_all()
DENOISE = {"T": 200, "valid_size": 8}


def denoise():
    return TASKS.get("denoise").create(DENOISE, batch_size=2, seed=0, device=torch.device("cpu"))


@pytest.mark.parametrize("model", [m.name for m in MODELS])
def test_every_model_is_matched_within_two_percent(model):
    hidden, count = hidden_size_for_budget(denoise(), model, 40_000, {})
    assert abs(count - 40_000) <= 0.02 * 40_000
    config = {"task": "denoise", "task_settings": DENOISE, "model": model, "hidden_size": hidden}
    network = build(TrialConfig.from_mapping(config), torch.device("cpu"))[1]
    assert count_parameters(network) == count  # the meta-device count is the real network's


def test_reference_form_and_resolved_spec():
    raw = tiny_spec(models=["lstm", "gru", "ncgru"], task={"name": "denoise", "settings": DENOISE})
    raw["params"]["hidden_size"] = {"match": {"model": "gru", "hidden_size": 100}}
    raw["per_model"] = {"ncgru": {"rho": 40}}
    spec = parse_spec(yaml.safe_dump(raw), "m.yaml")
    resolved, derived = resolve_matching(spec)
    target = network_parameters(denoise(), "gru", 100, {})
    assert derived["gru"] == (100, target)
    for model, (hidden, count) in derived.items():
        assert resolved.space(model)["hidden_size"] == hidden
        assert abs(count - target) <= 0.02 * target
    assert resolved.space("ncgru")["rho"] == 40 and derived["ncgru"][0] >= 40
    assert not any(isinstance(resolved.space(m)["hidden_size"], Match) for m in resolved.models)


def test_matching_a_file_task_without_data_is_a_clear_error(tmp_path):
    raw = tiny_spec(models=["gru"], task={"name": "ptb_char", "settings": {"data_dir": str(tmp_path)}})
    raw["params"] = {"hidden_size": {"match": {"parameters": 1000}}}
    spec = parse_spec(yaml.safe_dump(raw), "m.yaml")
    with pytest.raises(SpecError, match="parameter matching needs task 'ptb_char'"):
        resolve_matching(spec)
