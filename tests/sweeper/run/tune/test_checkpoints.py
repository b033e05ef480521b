"""CheckpointPruner: which persisted checkpoints it deletes, and when."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from ray.tune import Checkpoint

from sweeper.run.tune.checkpoints import CheckpointPruner


def persisted(folder: Path) -> Checkpoint:
    folder.mkdir(parents=True)
    (folder / "state.pt").write_bytes(b"state")
    return Checkpoint.from_directory(str(folder))


def test_superseded_and_ended_checkpoints_are_deleted(tmp_path: Path) -> None:
    a, b = SimpleNamespace(trial_id="a"), SimpleNamespace(trial_id="b")
    pruner = CheckpointPruner()
    pruner.setup()
    first, second = (
        persisted(tmp_path / "a" / "checkpoint_000000"),
        persisted(tmp_path / "a" / "checkpoint_000001"),
    )
    other = persisted(tmp_path / "b" / "checkpoint_000000")
    pruner.on_checkpoint(iteration=1, trials=[a, b], trial=a, checkpoint=first)
    pruner.on_checkpoint(iteration=1, trials=[a, b], trial=b, checkpoint=other)
    pruner.on_checkpoint(iteration=2, trials=[a, b], trial=a, checkpoint=second)
    pruner.on_trial_complete(iteration=3, trials=[a, b], trial=b)
    kept = persisted(tmp_path / "c" / "checkpoint_000000")
    pruner.on_experiment_end(trials=[a, b])  # waits for the deletions; deletes a's newest too
    assert not list((tmp_path / "a").iterdir())
    assert not list((tmp_path / "b").iterdir())
    assert Path(kept.path).is_dir(), "a checkpoint the pruner was never told of was deleted"


def test_newest_checkpoint_survives_until_its_trial_ends(tmp_path: Path) -> None:
    trial = SimpleNamespace(trial_id="t")
    pruner = CheckpointPruner()  # without setup: deletes at once, so the test can look in between
    for i in range(3):
        checkpoint = persisted(tmp_path / f"checkpoint_{i:06d}")
        pruner.on_checkpoint(iteration=i, trials=[trial], trial=trial, checkpoint=checkpoint)
        assert sorted(p.name for p in tmp_path.iterdir()) == [f"checkpoint_{i:06d}"]
    pruner.on_trial_error(iteration=3, trials=[trial], trial=trial)
    assert not list(tmp_path.iterdir())


def test_a_checkpoint_already_gone_is_no_error(tmp_path: Path) -> None:
    trial = SimpleNamespace(trial_id="t")
    pruner = CheckpointPruner()
    checkpoint = persisted(tmp_path / "checkpoint_000000")
    pruner.on_checkpoint(iteration=0, trials=[trial], trial=trial, checkpoint=checkpoint)
    (tmp_path / "checkpoint_000000" / "state.pt").unlink()
    (tmp_path / "checkpoint_000000").rmdir()
    pruner.on_trial_complete(iteration=1, trials=[trial], trial=trial)


def test_the_keeper_sees_a_trials_last_checkpoint_before_it_is_deleted(tmp_path: Path) -> None:
    seen = []

    def keeper(trial_id: str, checkpoint: Checkpoint | None) -> None:
        seen.append((trial_id, checkpoint and (Path(checkpoint.path) / "state.pt").read_bytes()))

    done, pruned = SimpleNamespace(trial_id="done"), SimpleNamespace(trial_id="pruned")
    pruner = CheckpointPruner(keeper)
    last = persisted(tmp_path / "checkpoint_000000")
    pruner.on_checkpoint(iteration=0, trials=[done], trial=done, checkpoint=last)
    pruner.on_trial_complete(iteration=1, trials=[done], trial=done)
    pruner.on_trial_complete(iteration=1, trials=[pruned], trial=pruned)
    assert seen == [("done", b"state"), ("pruned", None)]
    assert not Path(last.path).exists()


def test_a_failing_keeper_costs_the_weights_not_the_run(tmp_path: Path, caplog) -> None:
    def keeper(trial_id: str, checkpoint: Checkpoint | None) -> None:
        raise OSError("disk full")

    trial = SimpleNamespace(trial_id="t")
    pruner = CheckpointPruner(keeper)
    pruner.on_checkpoint(iteration=0, trials=[trial], trial=trial, checkpoint=persisted(tmp_path / "c"))
    pruner.on_trial_complete(iteration=1, trials=[trial], trial=trial)
    assert "could not keep the final weights of trial t: disk full" in caplog.text
    assert not (tmp_path / "c").exists()
