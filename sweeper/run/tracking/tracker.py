"""MLflow records of a sweep: one experiment, a parent run per study, a nested child run per trial.

Only the driver talks to MLflow. A tracking failure never stops a sweep: the study in the
database is the record of truth, and each call that fails is logged as a warning.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sweeper.run.tracking.local_store import prepare_sqlite_store
from sweeper.run.tracking.weights import WeightsDetails, log_weights
from sweeper.store.credentials import redact, scrub
from sweeper.store.locations import ANSWER_VIEW, resolve_tracking_uri

log = logging.getLogger(__name__)

PARENT_TAG = "mlflow.parentRunId"
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
TRAINING_KIND = "custom_model_development"  # MLflow 3's kind for model training experiments
ROLE_TAG = "sweeper.role"  # study (a parent run), trial, confirmation or report
ANSWER_VIEW_TAG = f"mlflow.sharedViewState.{ANSWER_VIEW}"  # what ?viewStateShareKey=answer opens
RUN_NAME_TAG = "mlflow.runName"
TRACEBACK_ARTIFACT = "traceback.txt"  # a failed trial's, on its run


def answer_view(ascending: bool, searched: Sequence[str] = ()) -> dict[str, Any]:
    """The MLflow UI's view state that shows a sweep's answer: the study runs, best first, each
    with its best trial's searched hyperparameters as columns."""
    return {
        "searchFilter": f"tags.`{ROLE_TAG}` = 'study'",
        "orderByKey": "metrics.`best_objective`",
        "orderByAsc": ascending,
        "selectedColumns": [
            "metrics.`best_objective`",
            "metrics.`p_best`",
            "tags.`sweeper.verdict`",
            "metrics.`parameters`",
            "tags.`model`",
            *(f"tags.`best.{name}`" for name in searched),
            "attributes.`Duration`",
        ],
        "runsExpanded": {},
    }


def race_tags(stop: Mapping[str, Any] | None) -> dict[str, str]:
    """A race's drop of a study (`RACE_STOP_ATTR`) as tags on its parent run."""
    if not stop:
        return {}
    tags = {"sweeper.raced_out": str(stop["reason"])[:5000]}
    for key in ("iteration", "of", "p_win", "against"):
        if key in stop:
            tags[f"sweeper.raced_out.{key}"] = str(stop[key])
    return tags


def _client(tracking_uri: str) -> Any:
    os.environ.setdefault("MLFLOW_ENABLE_ASYNC_LOGGING", "false")
    # MLflow's own defaults retry an unreachable server for minutes, which would stall the driver
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    from mlflow.tracking import MlflowClient

    prepare_sqlite_store(tracking_uri)
    return MlflowClient(tracking_uri=tracking_uri)


class Tracker:
    """Writes a sweep's runs through an `MlflowClient` bound to one tracking URI.

    A failed call opens a circuit for `pause` seconds during which calls are skipped and counted
    in `missed`: the driver keeps serving trials, and `sweeper sync-mlflow` (run automatically at
    the end of a sweep that missed writes) back-fills MLflow from the studies.
    """

    def __init__(self, tracking_uri: str, pause: float = 30.0) -> None:
        self.tracking_uri = tracking_uri
        self.client = _client(tracking_uri)
        self.pause = pause
        self.missed = 0
        self._closed_until = 0.0

    def call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if time.monotonic() < self._closed_until:
            self.missed += 1
            return None
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # a tracking outage must not cost a trial
            self.missed += 1
            self._closed_until = time.monotonic() + self.pause
            log.warning(
                "MLflow %s failed (%s); skipping MLflow for %.0fs, sync-mlflow back-fills",
                what,
                scrub(str(exc), self.tracking_uri),
                self.pause,
            )
            return None

    def experiment(
        self,
        name: str,
        description: str,
        artifact_root: Path | None = None,
        ascending: bool = True,
        searched: Sequence[str] = (),
    ) -> str:
        """The sweep's experiment id, created on first use: marked as model training, so MLflow 3
        opens it on its runs (not on the GenAI overview), with a shared view of the answer (the
        studies' parent runs, best first, their best objective, size and best trial's `searched`
        hyperparameters as columns) that `runs_page` links to. `ascending`: whether a lower
        objective is better."""
        tags = {
            EXPERIMENT_KIND_TAG: TRAINING_KIND,
            ANSWER_VIEW_TAG: json.dumps(answer_view(ascending, searched)),
        }
        existing = self.client.get_experiment_by_name(name)
        if existing is not None:
            for key, value in tags.items():
                if existing.tags.get(key) != value:
                    self.client.set_experiment_tag(existing.experiment_id, key, value)
            return existing.experiment_id
        location = artifact_root.resolve().as_uri() if artifact_root is not None else None
        return self.client.create_experiment(
            name, artifact_location=location, tags={"mlflow.note.content": description, **tags}
        )

    def parent_run(self, experiment_id: str, study_name: str, task: str, model: str) -> str:
        run = self.client.create_run(
            experiment_id,
            run_name=f"{task}/{model}",
            tags={"sweeper.role": "study", "sweeper.study": study_name, "task": task, "model": model},
        )
        return run.info.run_id

    def start_trial(
        self,
        experiment_id: str,
        parent_run_id: str,
        study_name: str,
        task: str,
        model: str,
        number: int,
        params: Mapping[str, Any],
        role: str = "trial",
        extra_tags: Mapping[str, str] | None = None,
    ) -> str | None:
        """A child run of the study's parent; `role` tells sweep trials from confirmation runs."""
        tags = {
            PARENT_TAG: parent_run_id,
            "sweeper.role": role,
            "sweeper.study": study_name,
            "task": task,
            "model": model,
            "optuna.trial_number": str(number),
            "state": "RUNNING",
            **(extra_tags or {}),
        }
        name = f"{model}-{number}" if role == "trial" else f"{model}-{number}-{role}-{params.get('seed')}"
        run = self.call("create_run", self.client.create_run, experiment_id, run_name=name, tags=tags)
        if run is None:
            return None
        from mlflow.entities import Param

        flat = [Param(k, _param_str(v)) for k, v in sorted(params.items())]
        self.call("log_batch", self.client.log_batch, run.info.run_id, params=flat)
        return run.info.run_id

    def log_metrics(self, run_id: str | None, step: int, metrics: Mapping[str, float | str]) -> None:
        """Numbers as metrics at `step`; text (what the trial ran on, such as its kernel) as tags."""
        if run_id is None:
            return
        from mlflow.entities import Metric, RunTag

        stamp = int(time.time() * 1000)
        batch = [Metric(k, float(v), stamp, step) for k, v in metrics.items() if _is_number(v)]
        tags = [RunTag(k, v) for k, v in metrics.items() if isinstance(v, str)]
        self.call("log_batch", self.client.log_batch, run_id, metrics=batch, tags=tags)

    def finish_trial(
        self,
        run_id: str | None,
        state: str,
        value: float | None,
        reason: str | None,
        traceback: str | None = None,
    ) -> None:
        """Close the trial's run; a failure's reason as a tag and its traceback as `traceback.txt`,
        readable after the Ray cluster (and its logs) are gone."""
        if run_id is None:
            return
        self.call("set_tag", self.client.set_tag, run_id, "state", state)
        if reason:
            self.call("set_tag", self.client.set_tag, run_id, "fail_reason", reason[:5000])
        if traceback:
            self.call("log_text", self.client.log_text, run_id, traceback, TRACEBACK_ARTIFACT)
        if value is not None:
            self.call("log_metric", self.client.log_metric, run_id, "objective", value)
        status = {"COMPLETE": "FINISHED", "PRUNED": "KILLED"}.get(state, "FAILED")
        self.call("set_terminated", self.client.set_terminated, run_id, status)

    def set_tags(self, run_id: str, tags: Mapping[str, str]) -> None:
        for key, value in tags.items():
            self.call("set_tag", self.client.set_tag, run_id, key, value)

    def log_parent_metrics(self, run_id: str, metrics: Mapping[str, float]) -> None:
        for key, value in metrics.items():
            self.call("log_metric", self.client.log_metric, run_id, key, value)

    def summarize_parent(
        self,
        run_id: str,
        best_value: float | None,
        best_params: Mapping[str, Any],
        parameters: int | None = None,
        race_stop: Mapping[str, Any] | None = None,
    ) -> None:
        """The study's answer on its parent run: the best objective and the best trial's network
        size as metrics (columns the run table can sort), its hyperparameters as tags, and where a
        race dropped the model, when, why and with what odds."""
        self.set_tags(run_id, race_tags(race_stop))
        if best_value is not None:
            self.call("log_metric", self.client.log_metric, run_id, "best_objective", best_value)
        if parameters is not None:
            self.call("log_metric", self.client.log_metric, run_id, "parameters", float(parameters))
        for key, value in best_params.items():
            self.call("set_tag", self.client.set_tag, run_id, f"best.{key}", _param_str(value))

    def log_report(self, experiment_id: str, files: list[Path]) -> str | None:
        """Attach report files to the sweep's `report` run (created once, reused by later reports)."""
        runs = self.call(
            "search_runs",
            self.client.search_runs,
            [experiment_id],
            filter_string="tags.`sweeper.role` = 'report'",
            max_results=1,
        )
        if runs:
            run_id = runs[0].info.run_id
        else:
            run = self.call(
                "create_run",
                self.client.create_run,
                experiment_id,
                run_name="report",
                tags={"sweeper.role": "report"},
            )
            if run is None:
                return None
            run_id = run.info.run_id
        for path in files:
            self.call("log_artifact", self.client.log_artifact, run_id, str(path))
        self.call("set_terminated", self.client.set_terminated, run_id, "FINISHED")
        return run_id

    def end_parent(self, run_id: str, status: str = "FINISHED", end_time: int | None = None) -> None:
        """`end_time` (ms): when the study's last trial ended, so the run's duration is the study's."""
        self.call("set_terminated", self.client.set_terminated, run_id, status, end_time)


class RunRef:
    """A trial's MLflow run, which the writer thread may still be creating."""

    def __init__(self, future: Future[str | None]) -> None:
        self._future = future

    def id(self, timeout: float | None = None) -> str | None:
        """The run id; None when MLflow refused the run or has not created it within `timeout`."""
        try:
            return self._future.result(timeout)
        except Exception:  # a timeout, or a failure the writer thread has already logged
            return None


class TrialWriter:
    """A sweep's per-trial MLflow writes, in order, on one thread of their own.

    Each write is an SQL commit or an HTTP request of 10-20 ms; made on the driver, they sit
    between one trial's end and the next one's start, and between a trial's report and its next
    step (Tune holds a reporting trial until the driver has taken the result). The studies stay
    the record of truth, written on the driver; MLflow only trails them by its queue.
    """

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweeper-mlflow")

    def _submit(self, what: str, fn: Callable[[], Any]) -> Future[Any]:
        def guarded() -> Any:
            try:
                return fn()
            except Exception as exc:  # a tracking bug must not cost a trial either
                log.warning("MLflow %s failed: %s", what, scrub(str(exc), self.tracker.tracking_uri))
                raise

        return self._pool.submit(guarded)

    def start_trial(self, *args: Any, **kwargs: Any) -> RunRef:
        """`Tracker.start_trial`, queued: the run id comes later through the returned `RunRef`."""
        return RunRef(self._submit("create_run", lambda: self.tracker.start_trial(*args, **kwargs)))

    def log_metrics(self, run: RunRef | None, step: int, metrics: Mapping[str, float | str]) -> None:
        values = dict(metrics)
        self._to_run(run, "log_batch", lambda run_id: self.tracker.log_metrics(run_id, step, values))

    def finish_trial(
        self,
        run: RunRef | None,
        state: str,
        value: float | None,
        reason: str | None,
        traceback: str | None = None,
    ) -> None:
        def finish(run_id: str) -> None:
            self.tracker.finish_trial(run_id, state, value, reason, traceback)

        self._to_run(run, "finish", finish)

    def keep_weights(
        self, run: RunRef | None, experiment_id: str, folder: Path, details: WeightsDetails
    ) -> None:
        """Log a finished trial's network (in `folder`, removed afterwards) as its study's kept model."""

        def write() -> None:
            run_id = run.id() if run is not None else None
            if run_id is None:
                shutil.rmtree(folder, ignore_errors=True)
                return
            try:
                log_weights(self.tracker.client, experiment_id, run_id, folder, details)
            except Exception as exc:  # the weights are lost, not the sweep's other MLflow writes
                log.warning(
                    "could not keep the weights of %s trial %d in MLflow: %s",
                    details.model,
                    details.trial,
                    scrub(str(exc), self.tracker.tracking_uri),
                )

        self._submit("log_weights", write)

    def _to_run(self, run: RunRef | None, what: str, write: Callable[[str], None]) -> None:
        """Queue a write to `run`, skipped when the run was never created."""
        if run is None:
            return

        def when_created() -> None:
            run_id = run.id()
            if run_id is not None:
                write(run_id)

        self._submit(what, when_created)

    def flush(self) -> None:
        """Wait until every queued write has been made (or has failed and been counted)."""
        self._pool.submit(lambda: None).result()


_trackers: dict[str, Tracker] = {}


def open_tracker(tracking_uri: str) -> Tracker | None:
    """One tracker per URI and process (creating an MLflow client costs over a second); None,
    with a warning, where MLflow cannot be reached."""
    uri = resolve_tracking_uri(tracking_uri)
    try:
        if uri not in _trackers:
            _trackers[uri] = Tracker(uri)
        return _trackers[uri]
    except Exception as exc:
        log.warning("MLflow tracking at %s is unavailable: %s", redact(tracking_uri), exc)
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _param_str(value: Any) -> str:
    return value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
