"""Real sweeps on tiny workloads: on a local Ray or joining the worker's Ray head, a real study
database, a real MLflow store, via the CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from sweeper.results.servers import ui_servers
from sweeper.store.database import Store
from sweeper.store.trial_record import counts_toward_budget, final_metrics
from tests.helpers import cli_env, run_cli, start_cli, tiny_spec, write_spec

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parents[3]
README_MAIN_RUN = "SWEEPER_README_MAIN_RUN"  # set by .ci/run: the folder holding the main command's output


def studies(url: str, sweep: str) -> dict[str, list[optuna.trial.FrozenTrial]]:
    store = Store(url)
    try:
        record = store.get_sweep(sweep)
        return {
            s.model: optuna.load_study(study_name=s.study_name, storage=store.optuna).get_trials()
            for s in record.studies
        }
    finally:
        store.dispose()


@pytest.mark.parametrize(
    "sweep",
    [
        pytest.param("finished_sweep", marks=pytest.mark.xdist_group("finished_sweep"), id="sqlite"),
        pytest.param("postgres_sweep", marks=pytest.mark.xdist_group("postgres_sweep"), id="postgresql"),
    ],
)
def test_two_models_four_trials_end_to_end(sweep, request):
    """The session's sweep on SQLite (its storage URL given by `--storage`) and on PostgreSQL (in
    SWEEPER_STORAGE, with a password), read as they were left."""
    sweep = request.getfixturevalue(sweep)
    storage, tracking, tmp_path = sweep.storage, sweep.tracking, sweep.cwd
    assert "sweep e2e-1: finished" in sweep.launch.stdout
    # a default local launch warns of nothing the user could act on (Ray's token notice included)
    assert "WARNING" not in sweep.launch.stdout + sweep.launch.stderr, sweep.launch.stderr
    assert f"mlflow ui --backend-store-uri {tracking}" in sweep.launch.stdout

    trials = studies(storage, "e2e-1")
    assert sorted(trials) == ["gru", "lstm"]
    for model, model_trials in trials.items():
        assert len(model_trials) == 4, model
        assert len({t.number for t in model_trials}) == 4
        for trial in model_trials:
            assert trial.state in (TrialState.COMPLETE, TrialState.PRUNED)
            steps = sorted(trial.intermediate_values)
            assert steps and steps[0] == 10
            if trial.state == TrialState.COMPLETE:
                assert steps[-1] == 30
                assert trial.value == min(trial.intermediate_values.values())
            else:
                assert steps[-1] < 30

    client = MlflowClient(tracking)
    (experiment,) = [e for e in client.search_experiments() if e.name == "e2e-1"]
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("sweeper.role") == "study"]
    children = [r for r in runs if r.data.tags.get("sweeper.role") == "trial"]
    assert len(parents) == 2 and len(children) == 8
    parent_ids = {p.info.run_id for p in parents}
    states = {(m, t.number): t.state.name for m, ts in trials.items() for t in ts}
    for child in children:
        tags = child.data.tags
        assert tags["mlflow.parentRunId"] in parent_ids
        assert tags["task"] == "denoise" and tags["model"] in ("lstm", "gru")
        assert tags["state"] == states[(tags["model"], int(tags["optuna.trial_number"]))]
        history = client.get_metric_history(child.info.run_id, "valid_loss")
        assert [m.step for m in history][:1] == [10]
        assert {"train_loss", "valid_accuracy_all_steps", "wall_time", "grad_norm"} <= set(child.data.metrics)
        assert "hidden_size" in child.data.params and child.data.params["task.T"] == "6"
    for parent in parents:
        assert "best_objective" in parent.data.metrics

    summary = run_cli(["summarize", "e2e-1", "--storage", storage, "--format", "json"], tmp_path)
    assert summary.returncode == 0, summary.stderr
    data = json.loads(summary.stdout)
    best = {s["model"]: s for s in data["studies"]}
    for model, model_trials in trials.items():
        complete = [t.value for t in model_trials if t.state == TrialState.COMPLETE]
        assert best[model]["best"] == pytest.approx(min(complete))
        assert best[model]["parameters"] > 0
    values = [s["best"] for s in data["studies"]]
    assert values == sorted(values)
    # priced at launch, beside what its trials spent in their workers (each trial's own wall time)
    for study in data["studies"]:
        low, high = study["predicted_worker_hours"]
        assert 0 < low <= high and study["seconds"] > 0
        counted = [t for t in trials[study["model"]] if counts_toward_budget(t)]
        walls = [final_metrics(t)["wall_time"] for t in counted]
        assert study["worker_seconds"] == pytest.approx(sum(walls))
        assert 0 < study["worker_seconds"] < study["seconds"]  # a trial's clock starts at its suggestion
    assert "cost: priced at" in sweep.launch.stdout and "in the workers" in sweep.launch.stdout

    listing = run_cli(["list", "--storage", storage], tmp_path)
    assert "e2e-1" in listing.stdout and "finished" in listing.stdout
    markdown = run_cli(["summarize", "e2e-1", "--storage", storage, "--format", "markdown"], tmp_path)
    assert "| model | best |" in markdown.stdout


def test_scheduler_prunes_and_a_raising_trial_fails_while_the_sweep_goes_on(shared_launch, tmp_path):
    cwd, result = shared_launch
    sweeps = cwd / "sweeps"
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sweep faults-1: finished" in result.stdout

    trials = studies(f"sqlite:///{sweeps / 'sweeper.db'}", "faults-1")
    exploding = trials["exploding"]
    assert len(exploding) == 4
    client = MlflowClient(f"sqlite:///{sweeps / 'mlflow.db'}")
    for trial in exploding:
        assert trial.state == TrialState.FAIL
        assert trial.user_attrs["fail_reason"] == "RuntimeError: exploding model failed on purpose"
        assert trial.intermediate_values == {}  # it failed at step 6, before its first report
        # where it failed, readable once the Ray cluster and its logs are gone (this one has stopped)
        traceback = trial.user_attrs["fail_traceback"]
        assert "sweeper_test_plugin.py" in traceback and traceback.rstrip().endswith(
            "RuntimeError: exploding model failed on purpose"
        )
        run_id = trial.user_attrs["mlflow_run_id"]
        assert client.download_artifacts(run_id, "traceback.txt", str(tmp_path)) and (
            (tmp_path / "traceback.txt").read_text() == traceback
        )
    (experiment,) = (sweeps / "ray_results").glob("faults-1-*")  # the sweep's own, not ptb-1's
    outputs = sorted(experiment.rglob("stderr"))
    assert len(outputs) >= 8, "every trial keeps its stdout and stderr beside its results"
    gru = trials["gru"]
    assert len(gru) == 4
    assert {t.state for t in gru} == {TrialState.COMPLETE, TrialState.PRUNED}
    for trial in gru:
        if trial.state == TrialState.PRUNED:
            assert max(trial.intermediate_values) < 30


def test_a_model_the_race_stopped_shows_in_status_json_and_mlflow(shared_launch):
    cwd, result = shared_launch
    sweeps = cwd / "sweeps"
    assert "sweep raced-1: finished" in result.stdout, result.stdout + result.stderr
    trials = studies(f"sqlite:///{sweeps / 'sweeper.db'}", "raced-1")
    gru = trials["gru"]
    assert len(gru) == 2 and len(trials["scornn"]) == 4  # the trials gru did not run went to scornn
    said = "stopped by the race after 2 trials: P(within the tie margin of the best) = "
    status = run_cli(["status", "raced-1"], cwd)
    assert status.returncode == 0 and said in status.stdout, status.stdout
    data = json.loads(run_cli(["status", "raced-1", "--json"], cwd).stdout)
    (row,) = [s for s in data["studies"] if s["model"] == "gru"]
    assert row["race_stopped"].startswith(said) and "; best " in row["race_stopped"]
    client = MlflowClient(f"sqlite:///{sweeps / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name.startswith("raced-1")]
    (parent,) = client.search_runs(
        [experiment.experiment_id], "tags.`sweeper.role` = 'study' and tags.model = 'gru'"
    )
    assert parent.data.tags["sweeper.raced_out"] == row["race_stopped"]
    # the verdict states its odds: scoRNN alone, against the only other model, stopped far behind
    # (what they say, recalibrated to how often a race's verdicts were right: test_calibration.py)
    assert "P(scornn is the true winner) = " in status.stdout and data["odds"]["winner"] == "scornn"
    (winner,) = client.search_runs(
        [experiment.experiment_id], "tags.`sweeper.role` = 'study' and tags.model = 'scornn'"
    )
    assert winner.data.metrics["p_best"] >= 0.9 and winner.data.tags["sweeper.verdict"].startswith(
        "winner, P "
    )


def test_interrupt_then_resume_reaches_the_budget_without_losing_or_repeating_trials(tmp_path, ray_head):
    """Ctrl-C to the driver of a sweep on the worker's Ray head, then `resume` on the same head."""
    spec = tiny_spec(
        name="resumable",
        scheduler="none",
        budget={"trials": 5, "max_concurrent": 1},
    )
    spec["params"].update(iterations=150, eval_every=50)
    config = write_spec(tmp_path, spec)
    url = f"sqlite:///{tmp_path / 'sweeps' / 'sweeper.db'}"

    env = cli_env(ray_head.env)
    process = start_cli(["launch", str(config), "--no-price", *ray_head.args], tmp_path, env)
    deadline = time.monotonic() + 300
    finished_before: set[tuple[str, int]] = set()
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(1)
        try:
            trials = studies(url, "resumable-1")
        except Exception:
            continue
        finished_before = {
            (m, t.number) for m, ts in trials.items() for t in ts if t.state == TrialState.COMPLETE
        }
        if len(finished_before) >= 2:
            break
    assert process.poll() is None, "the sweep ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=180)
    assert process.returncode == 130, output
    assert "interrupted" in output and "sweeper resume resumable-1" in output

    store = Store(url)
    assert store.get_sweep("resumable-1").status == "interrupted"
    store.dispose()
    after_interrupt = studies(url, "resumable-1")
    complete_after_interrupt = {
        (m, t.number) for m, ts in after_interrupt.items() for t in ts if t.state == TrialState.COMPLETE
    }
    assert finished_before <= complete_after_interrupt
    assert all(t.state != TrialState.RUNNING for ts in after_interrupt.values() for t in ts)

    resumed = run_cli(["resume", "resumable-1", *ray_head.args], tmp_path, env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = studies(url, "resumable-1")
    for model, trials in final.items():
        numbers = [t.number for t in trials]
        assert len(numbers) == len(set(numbers))
        complete = {(model, t.number) for t in trials if t.state == TrialState.COMPLETE}
        assert {k for k in complete_after_interrupt if k[0] == model} <= complete
        counted = [
            t for t in trials if t.state != TrialState.FAIL or "sweeper_interrupted" not in t.user_attrs
        ]
        assert len(counted) == 5
        assert all(t.state == TrialState.COMPLETE for t in counted)
    store = Store(url)
    assert store.get_sweep("resumable-1").status == "finished"
    store.dispose()


def readme_main_command(tmp_path: Path) -> tuple[Path, str, str]:
    """Where the README's main command ran and what it printed (stdout, stderr): as CI ran it in
    this checkout just before the tests (`.ci/run` keeps its output in SWEEPER_README_MAIN_RUN),
    or its launch run here in `tmp_path` where nothing ran it."""
    ran = os.environ.get(README_MAIN_RUN)
    if ran:
        stdout, stderr = ((Path(ran) / name).read_text() for name in ("stdout", "stderr"))
        return ROOT, stdout, stderr
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "denoise.yaml").write_text((ROOT / "configs" / "denoise.yaml").read_text())
    result = run_cli(["launch", "configs/denoise.yaml", "--profile", "smoke"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    return tmp_path, result.stdout, result.stderr


def test_readme_main_command_runs_the_smoke_sweep(tmp_path):
    """The README's first command: the denoise sweep with the smoke profile on embedded defaults."""
    readme = (ROOT / "README.md").read_text()
    assert "sweeper launch configs/denoise.yaml --profile smoke" in readme
    cwd, stdout, stderr = readme_main_command(tmp_path)
    assert "sweep denoise-1: " in stdout, stdout[-3000:] + stderr[-3000:]
    launch = stdout[stdout.index("sweep denoise-1: ") :]  # after the installs, where CI ran the command
    assert "sweep denoise-1: finished" in launch
    assert (cwd / "sweeps" / "sweeper.db").is_file() and (cwd / "sweeps" / "mlflow.db").is_file()
    verdict = " ".join(launch[launch.index("winner") :].split())  # CI's is wrapped at 80 columns
    below = re.search(r"\(([\d.]+)%\) lower than the task's memoryless baseline", verdict)
    assert below and float(below.group(1)) >= 20, verdict  # the winner learned: at most 0.8x the baseline
    assert "Warning" not in launch + stderr
    status = run_cli(["status"], cwd)
    assert "denoise-1 (finished)" in status.stdout
    assert " ".join(status.stdout.split()).endswith(verdict)  # status ends with the launch's verdict
    sample = readme.split("<!-- main-sample -->")[1].split("```text\n")[1].split("```")[0]
    printed = {shape(line) for line in launch.splitlines()}
    assert {shape(line) for line in steady_lines(sample)} <= printed, "README's sample is not what it prints"
    assert any(line.startswith("winner: ") for line in launch.splitlines())


MODELS_NAMED = "goru_noreset|goru_noupdate|scornn|ncgru|eurnn|lstm|goru|gru"


def shape(line: str) -> str:
    """A printed line with what moves from run to run made alike: numbers, model names, the widths
    of a table's rules and padding."""
    line = re.sub(r"\d+(\.\d+)?", "0", line)
    line = re.sub(rf"\b({MODELS_NAMED})\b", "M", line)
    line = re.sub(r"([━─])\1+", r"\1", line)
    return " ".join(line.split())


def steady_lines(sample: str) -> list[str]:
    """The README sample's lines whose shape does not move with the values: not the answer's
    sentences, whose wrapping does, nor the sample's marks of where it is cut (`[cut: ...]`)."""
    return [
        line
        for line in sample.splitlines()
        if not line.startswith(("winner:", "P(", "cost:", "the search may", "[cut:"))
        and not (line.startswith("  ") and not line.lstrip().startswith("sweeper"))
    ]


def test_each_study_keeps_its_best_trials_weights_and_a_run_continues_from_them(finished_sweep, tmp_path):
    """One READY PyTorch model per study, linked to its best trial's run; pruned trials keep none;
    `sweeper train --init-from RUN` starts from those weights, on the run's own settings."""
    from sweeper.results.kept_weights import WEIGHTS_TAG, study_models
    from sweeper.store.trial_record import MLFLOW_RUN_ATTR

    client = MlflowClient(finished_sweep.tracking)
    (experiment,) = [e for e in client.search_experiments() if e.name == finished_sweep.name]
    for model, model_trials in studies(finished_sweep.storage, finished_sweep.name).items():
        best = min((t for t in model_trials if t.state == TrialState.COMPLETE), key=lambda t: t.value)
        (kept,) = study_models(client, experiment.experiment_id, f"{finished_sweep.name}/denoise/{model}")
        assert kept.status.name == "READY", model
        assert kept.source_run_id == best.user_attrs[MLFLOW_RUN_ATTR]
        for trial in model_trials:
            tags = client.get_run(trial.user_attrs[MLFLOW_RUN_ATTR]).data.tags
            assert (WEIGHTS_TAG in tags) == (trial.number == best.number), (model, trial.number)
    gru = min(
        (
            t
            for t in studies(finished_sweep.storage, finished_sweep.name)["gru"]
            if t.state == TrialState.COMPLETE
        ),
        key=lambda t: t.value,
    )
    args = [
        "train",
        "--init-from",
        gru.user_attrs[MLFLOW_RUN_ATTR],
        "--tracking-uri",
        finished_sweep.tracking,
    ]
    continued = run_cli([*args, "--set", "iterations=10", "--set", "eval_every=10"], tmp_path)
    assert continued.returncode == 0, continued.stdout + continued.stderr
    assert f"initial weights: gru trial {gru.number} of {finished_sweep.name}/denoise/gru" in continued.stderr
    assert f"parameters={gru.user_attrs['final_metrics']['parameters']:.5g}" in continued.stdout


def test_mlflow_opens_on_the_runs_with_each_studys_answer(finished_sweep):
    """What the MLflow UI is given: a training experiment (MLflow 3 opens it on its runs), parent
    runs whose metrics are the best objective and its network size, and whose time is the study's."""
    client = MlflowClient(finished_sweep.tracking)
    (experiment,) = [e for e in client.search_experiments() if e.name == finished_sweep.name]
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    view = json.loads(experiment.tags["mlflow.sharedViewState.answer"])  # what the printed URL opens
    assert view["searchFilter"] == "tags.`sweeper.role` = 'study'"
    assert (view["orderByKey"], view["orderByAsc"]) == ("metrics.`best_objective`", True)
    assert {"metrics.`best_objective`", "metrics.`parameters`"} <= set(view["selectedColumns"])
    assert {"tags.`best.hidden_size`", "tags.`best.lr`"} <= set(view["selectedColumns"])  # the searched
    trials = studies(finished_sweep.storage, finished_sweep.name)
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    for parent in (r for r in runs if r.data.tags.get("sweeper.role") == "study"):
        model_trials = trials[parent.data.tags["model"]]
        best = min((t for t in model_trials if t.state == TrialState.COMPLETE), key=lambda t: t.value)
        assert parent.data.metrics["best_objective"] == pytest.approx(best.value)
        assert parent.data.metrics["parameters"] == best.user_attrs["final_metrics"]["parameters"] > 0
        last_end = max(t.datetime_complete for t in model_trials).timestamp() * 1000
        assert parent.info.end_time == pytest.approx(last_end, abs=1000)
    (report,) = [r for r in runs if r.data.tags.get("sweeper.role") == "report"]  # the sweep's answer
    # what the sweep's end wrote there (a `sweeper report` of this sweep in another test adds more)
    assert {"learning-curves.png", "ranking.md"} <= {
        a.path for a in client.list_artifacts(report.info.run_id)
    }
    store = Store(finished_sweep.storage)
    lines, _ = ui_servers(store, store.get_sweep(finished_sweep.name), "127.0.0.1", 5000, 8080)
    runs = f"http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}/runs?viewStateShareKey=answer"
    assert f"MLflow UI: {runs}" in lines
    store.dispose()


def test_a_sweep_whose_trials_all_fail_exits_1_with_each_models_reason(failing_launch):
    _, result = failing_launch
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "exploding: all 3 trials failed; most often (3×): RuntimeError: exploding model failed on purpose"
        in (result.stdout)
    )


def test_the_ending_ranks_the_models_names_the_winner_and_what_to_run_next(finished_sweep):
    out = finished_sweep.launch.stdout
    trials = studies(finished_sweep.storage, finished_sweep.name)
    best = {m: min(t.value for t in ts if t.state == TrialState.COMPLETE) for m, ts in trials.items()}
    winner, runner_up = sorted(best, key=best.get)
    table = [line for line in out.splitlines() if line.startswith("│")]
    assert table[0].split("│")[1].strip() == f"{winner} ★"  # best first, marked
    assert f"winner: {winner}, best valid_loss {best[winner]:.5g}" in out
    assert f"the runner-up {runner_up} ({best[runner_up]:.5g})" in out
    for command in ("summarize", "confirm", "report", "ui"):
        assert f"sweeper {command} {finished_sweep.name}" in out
    assert max(len(line) for line in table) <= 80
    assert len(table) == 2  # every row on one line within 80 columns


def test_a_second_ctrl_c_aborts_and_says_how_to_resume(tmp_path):
    spec = tiny_spec(name="twice", scheduler="none", budget={"trials": 4, "max_concurrent": 1})
    spec["params"].update(iterations=400, eval_every=50)
    process = start_cli(["launch", str(write_spec(tmp_path, spec)), "--no-price"], tmp_path)
    url = f"sqlite:///{tmp_path / 'sweeps' / 'sweeper.db'}"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.5)
        try:
            if any(t.intermediate_values for ts in studies(url, "twice-1").values() for t in ts):
                break
        except Exception:
            continue
    assert process.poll() is None, "the sweep ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=180)
    assert process.returncode == 130, output
    assert "sweeper resume twice-1" in output
    assert "Traceback" not in output, output


def test_a_file_based_task_reads_its_relative_data_dir_from_the_launch_directory(shared_launch):
    """Tune would run each trial inside its own folder; the trial must still find `data/ptb`, the
    directory preflight checked, relative to where `sweeper launch` ran."""
    cwd, result = shared_launch
    sweeps = cwd / "sweeps"
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sweep ptb-1: finished" in result.stdout
    (trial,) = studies(f"sqlite:///{sweeps / 'sweeper.db'}", "ptb-1")["gru"]
    assert trial.state == TrialState.COMPLETE, trial.user_attrs
