"""Trial checkpoints on disk: only the newest of a running trial, none once the trial has ended.

A checkpoint exists so that a trial continues on another worker when its node is lost; sweeper
never restores a trial that has ended (`resume` reruns interrupted trials from their studies), so
an ended trial's checkpoint is only disk in use. Tune could keep one per trial itself
(`CheckpointConfig(num_to_keep=1)`), but then it writes a snapshot of the whole experiment at
every trial checkpoint, in the driver's loop, and that snapshot grows with the number of trials
(`benchmarks/overheads/checkpoints.py`). So Tune keeps every checkpoint in its books and this callback
deletes the superseded ones, on a thread of its own so that a slow filesystem holds no trial.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ray.tune import Callback, Checkpoint

from sweeper.run.tune.driver_state import driver_only_state

log = logging.getLogger(__name__)


def delete_checkpoint(checkpoint: Checkpoint) -> None:
    """Remove a persisted checkpoint's folder from its filesystem (local, NFS, or cloud)."""
    try:
        checkpoint.filesystem.delete_dir(checkpoint.path)
    except FileNotFoundError:
        pass
    except OSError as exc:  # the space is lost, not the sweep
        log.warning("could not delete the superseded checkpoint %s: %s", checkpoint.path, exc)


Keeper = Callable[[str, Checkpoint | None], None]


class CheckpointPruner(Callback):
    """Deletes a trial's checkpoint once a newer one is persisted, and its last when it ends.

    A trial that ran to its end reported its trained network in its last checkpoint: `keeper`
    (the searcher's, which knows whether the trial is its study's best) sees it before it goes.
    """

    def __init__(self, keeper: Keeper | None = None) -> None:
        self._newest: dict[str, Checkpoint] = {}
        self._deleter: ThreadPoolExecutor | None = None
        self._keeper = keeper

    def __getstate__(self) -> dict[str, Any]:
        return driver_only_state(self)

    def setup(self, **info: Any) -> None:
        self._deleter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweeper-checkpoints")

    def on_checkpoint(
        self, iteration: int, trials: list[Any], trial: Any, checkpoint: Checkpoint, **info: Any
    ) -> None:
        previous = self._newest.get(trial.trial_id)
        self._newest[trial.trial_id] = checkpoint
        if previous is not None and previous.path != checkpoint.path:
            self._delete(previous)

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """Tune calls this after the searcher's `on_trial_complete`: the trial's outcome is known."""
        if self._keeper is not None:
            try:
                self._keeper(trial.trial_id, self._newest.get(trial.trial_id))
            except Exception as exc:  # the weights are lost, not the sweep
                log.warning("could not keep the final weights of trial %s: %s", trial.trial_id, exc)
        self._forget(trial.trial_id)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """Called once Tune has given up on the trial (its retries spent), not between retries."""
        self._forget(trial.trial_id)

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        """Trials cut by the end of the run are rerun from their studies, never from these."""
        for trial_id in list(self._newest):
            self._forget(trial_id)
        if self._deleter is not None:
            self._deleter.shutdown(wait=True)
            self._deleter = None

    def _forget(self, trial_id: str) -> None:
        checkpoint = self._newest.pop(trial_id, None)
        if checkpoint is not None:
            self._delete(checkpoint)

    def _delete(self, checkpoint: Checkpoint) -> None:
        if self._deleter is None:
            delete_checkpoint(checkpoint)
        else:
            self._deleter.submit(delete_checkpoint, checkpoint)
