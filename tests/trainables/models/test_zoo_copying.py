import math

import pytest

from trainables.train import train

DELAY = 20
STEPS = {"eurnn": 300, "scornn": 300, "goru": 1000, "ncgru": 700}  # see the test's docstring


@pytest.mark.slow
@pytest.mark.parametrize("name", ["eurnn", "scornn", "goru", "ncgru"])
def test_orthogonal_models_beat_the_memoryless_copying_baseline(name: str) -> None:
    """Copying with delay T = 20 (baseline 10·ln 8/(T + 20) = 0.520), through `train` end to end.

    Budget: hidden 64, batch 32, RMSProp at lr 3e-3 (orthogonal parameters RMSProp 1e-3), seed 0,
    256 validation sequences; each model for the steps it needs (`STEPS`). Measured valid loss
    (one thread): EURNN 0.028 and scoRNN 0.148 at step 300 (0.002 and 0.090 at 1000); NC-GRU 0.386
    at 700 (0.345 at 1000); GORU 0.424 at 1000 (0.443 at 800). At T = 50 GORU and NC-GRU only reached
    0.288 and 0.270 against 0.297 in 1500 steps, so the gated models, which learn copying slowly
    (as in the papers), get a short delay.
    """
    config = {
        "task": "copying",
        "task_settings": {"T": DELAY, "valid_size": 256},
        "model": name,
        "hidden_size": 64,
        "batch_size": 32,
        "optimizer": "rmsprop",
        "lr": 3e-3,
        "orth_optimizer": "rmsprop",
        "orth_lr": 1e-3,
        "iterations": STEPS[name],
        "eval_every": STEPS[name],
        "seed": 0,
        "device": "cpu",
    }
    metrics = train(config, lambda step, metrics: None)
    baseline = 10 * math.log(8) / (DELAY + 20)
    assert metrics["valid_loss"] < 0.9 * baseline
    assert metrics["ortho_error"] < 1e-3
