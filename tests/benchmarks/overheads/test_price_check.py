"""The price check splits what a sweep spent into the trainables' own time and the rest."""

from __future__ import annotations

from pathlib import Path

import optuna

from benchmarks.overheads.price_check import trainable_seconds


def test_each_studys_training_time_is_the_sum_of_its_trials_own_wall_time(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'sweeper.db'}"
    for model, walls in {"gru": [1.5, 2.25], "goru_noreset": [4.0]}.items():
        study = optuna.create_study(study_name=f"denoise-1/denoise/{model}", storage=storage)
        for wall in walls:
            trial = study.ask()
            trial.set_user_attr("final_metrics", {"wall_time": wall, "valid_loss": 0.1})
            study.tell(trial, 0.1)
        study.ask()  # a trial that never reported counts nothing
    assert trainable_seconds(storage) == {"gru": 3.75, "goru_noreset": 4.0}
