"""The verdict a sweep ends with, from its study summaries."""

from __future__ import annotations

import yaml

from sweeper.results.summaries import StudySummary
from sweeper.results.verdict import all_failed, verdict
from sweeper.spec.loading import parse_spec
from sweeper.store.database import SweepRecord
from tests.helpers import tiny_spec


def record() -> SweepRecord:
    spec = parse_spec(yaml.safe_dump(tiny_spec(models=("lstm", "gru", "goru"))), "t.yaml")
    return SweepRecord(name="tiny-1", spec_yaml=spec.to_yaml())


def summary(model: str, best: float | None, complete: int = 2, failed: int = 0, reason: str | None = None):
    counts = {"COMPLETE": complete, "PRUNED": 0, "FAIL": failed, "RUNNING": 0}
    return StudySummary(
        study=f"tiny-1/denoise/{model}",
        task="denoise",
        model=model,
        counts=counts,
        interrupted=0,
        best_value=best,
        best_trial=0 if best is not None else None,
        common_failure=(reason, failed) if reason else None,
    )


def test_the_winner_its_margins_and_the_next_commands() -> None:
    lines = verdict(record(), [summary("lstm", 0.09), summary("gru", 0.06), summary("goru", 0.08)], 0.1)
    assert lines[0].startswith("winner: gru, best valid_loss 0.06 (trial #0)")
    assert "0.02 (25.0%) lower than the runner-up goru (0.08)" in lines[0]
    assert "0.04 (40.0%) lower than the task's memoryless baseline (0.1)" in lines[0]
    assert "sweeper confirm tiny-1 --seeds 5" in "\n".join(lines)
    assert "sweeper report tiny-1" in "\n".join(lines) and "sweeper ui tiny-1" in "\n".join(lines)


def test_a_winner_that_is_no_better_than_the_baseline_is_called_so() -> None:
    (line, *_) = verdict(record(), [summary("gru", 0.11)], 0.1)
    assert "higher than the task's memoryless baseline" in line and "no model learned" in line


def test_models_whose_trials_all_failed_get_their_most_common_reason() -> None:
    summaries = [
        summary(
            "gru", None, complete=0, failed=4, reason="MissingDataError: task 'ptb_char' needs 3 files\nmore"
        ),
        summary("lstm", None, complete=0, failed=4, reason="MissingDataError: task 'ptb_char' needs 3 files"),
    ]
    lines = verdict(record(), summaries, None)
    assert (
        "gru: all 4 trials failed; most often (4×): MissingDataError: task 'ptb_char' needs 3 files" in lines
    )
    assert not any(line.startswith("winner") for line in lines)
    assert all_failed(summaries) and not all_failed([summary("gru", 0.1)])


def test_a_sweep_whose_budget_ended_before_every_model_ran_says_its_verdict_is_partial() -> None:
    """The busy-machine case: the time budget ran out with goru untrained."""
    summaries = [summary("lstm", 0.09), summary("gru", 0.06), summary("goru", None, complete=0)]
    lines = verdict(record(), summaries, None)
    assert lines[0].startswith("winner of the 2 models with a complete trial: gru")
    assert "partial: no complete trial for goru; the verdict covers only gru, lstm" in lines
    full = verdict(record(), [summary("lstm", 0.09), summary("gru", 0.06)], None)
    assert full[0].startswith("winner: gru") and not any(line.startswith("partial") for line in full)


def test_a_maximised_objective_without_a_baseline_names_the_highest_and_its_odds() -> None:
    """Shortest path's accuracy: the highest wins (a leader at 100%), no baseline is named, and
    the odds' fallback noise is the tables' relative spread of the share wrong."""
    from sweeper.results.odds import Estimate, odds, seed_noise

    spec = tiny_spec(
        models=("lstm", "gru", "goru"),
        task={"name": "shortest_path", "settings": {"train_size": 50, "valid_size": 20, "test_size": 20}},
    )
    shortest = SweepRecord(name="sp-1", spec_yaml=parse_spec(yaml.safe_dump(spec), "sp.yaml").to_yaml())
    values = {"lstm": 0.6, "gru": 0.95, "goru": 1.0}
    said = odds(
        {m: Estimate(v, 1, "its best trial") for m, v in values.items()},
        seed_noise([], [], 1.0, "max"),
        "max",
    )
    lines = verdict(shortest, [summary(m, v) for m, v in values.items()], None, said)
    assert lines[0].startswith(
        "winner: goru, best valid_accuracy 1 (trial #0), 0.05 (5.3%) higher than the runner-up gru"
    )
    assert "baseline" not in lines[0]
    assert lines[1].startswith("P(goru is the true winner) = 1.00")


def test_a_raced_out_model_is_unfinished_with_its_chance_not_answered() -> None:
    """A race stops a model on its stated chance of tying for the win, or for a rung without a
    complete trial: the first stays in the odds with that chance now, the second leaves the verdict
    partial (nothing says it could not have won)."""
    from sweeper.results.odds import Estimate, Noise, odds

    stopped = "stopped by the race after 2 trials: P(within the tie margin of the best) = 0.01"
    lstm = summary("lstm", 0.09)
    lstm.race_stopped = stopped
    said = odds(
        {"gru": Estimate(0.06, 1, "its best trial"), "lstm": Estimate(0.09, 1, "its best trial")},
        Noise(0.001, "test"),
        "min",
    )
    lines = verdict(record(), [summary("gru", 0.06), lstm], None, said)
    assert f"lstm: {stopped}; unfinished, P(within the tie margin of the best) now 0.00" in lines
    goru = summary("goru", None, complete=0)
    goru.race_stopped = "stopped by the race after 2 trials: no complete trial in its rung"
    lines = verdict(record(), [summary("gru", 0.06), summary("lstm", 0.09), goru], None)
    assert "partial: no complete trial for goru; the verdict covers only gru, lstm" in lines
    assert "goru: stopped by the race after 2 trials: no complete trial in its rung" in lines
