"""The command line: bad input exits 2 naming what is wrong and writes nothing; listings work."""

from __future__ import annotations

import subprocess
import sys

import click
import psutil
import pytest
import yaml
from click.testing import CliRunner

from sweeper.cli import COMMANDS, main
from sweeper.results.servers import serve_until_stopped
from tests.helpers import GPU_RESOURCES, run_cli, tiny_spec, write_spec


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SWEEPER_STORAGE", raising=False)
    monkeypatch.delenv("SWEEPER_TRACKING_URI", raising=False)
    return CliRunner()


def invoke(runner, *args):
    return runner.invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda s: s.update(colour="red"), "colour"),
        (lambda s: s["models"].append("nosuchmodel"), "models.2"),
        (lambda s: s["task"].update(name="nosuchtask"), "task.name"),
        (lambda s: s["params"].update(lr={"float": [1.0, 0.1]}), "params.lr"),
        (lambda s: s["budget"].update(trials=-1), "budget.trials"),
    ],
)
def test_bad_spec_exits_2_naming_file_and_key_and_writes_nothing(runner, tmp_path, mutate, key):
    raw = tiny_spec()
    mutate(raw)
    path = write_spec(tmp_path, raw)
    result = invoke(runner, "launch", str(path))
    assert result.exit_code == 2
    assert f"{path}:" in result.output and key in result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_new_spec_allocating_by_curves_is_refused_with_the_reason_and_writes_nothing(
    runner, tmp_path, dry_run
):
    """Withdrawn: a sweep stored with it still resumes (`tests/sweeper/run/test_withdrawn_allocation.py`)."""
    path = write_spec(tmp_path, tiny_spec(budget={"trials": 4, "allocate": "curves"}))
    line = next(i for i, l in enumerate(path.read_text().splitlines(), 1) if "allocate: curves" in l)
    result = invoke(runner, "launch", str(path), *(["--dry-run"] if dry_run else []))
    assert result.exit_code == 2
    (problem,) = result.output.strip().splitlines()[1:]
    assert problem.strip().startswith(f"{path}:{line}: budget.allocate: curves is withdrawn (")
    assert "use allocate: equal or race" in problem and "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


def test_one_bad_config_among_several_launches_none(runner, tmp_path):
    good = write_spec(tmp_path, tiny_spec(), "good.yaml")
    bad = write_spec(tmp_path, {**tiny_spec(), "seed": -1}, "bad.yaml")
    result = invoke(runner, "launch", str(good), str(bad))
    assert result.exit_code == 2 and "bad.yaml" in result.output
    assert not (tmp_path / "sweeps").exists()


def test_dry_run_prints_the_plan_and_starts_nothing(runner, tmp_path, monkeypatch):
    from sweeper.spec.trial_cost import CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "kept"))  # nothing timed before: it says what it times
    path = write_spec(tmp_path, tiny_spec())
    result = invoke(runner, "launch", str(path), "--dry-run", "--max-trials", "7", "--time-budget", "30m")
    assert result.exit_code == 0, result.output
    assert "study denoise/lstm" in result.output and "study denoise/gru" in result.output
    assert "hidden_size: int [4, 16] log" in result.output
    assert "7 trials per study, 1800s in all" in result.output
    # its price, from paces measured here: each study, then the sweep to its budget and first answer
    assert "price (trials here, paces measured here;" in result.output
    assert "the trials' training, not the sweep's few seconds a trial" in result.output
    assert "lstm: 7 trials," in result.output and "the dearest end of its space here (cpu)" in result.output
    assert "  timing lstm at hidden size 4 (cpu) ..." in result.output  # said while it times, the first time
    assert "worker-hours" in result.output and "to the first answer" in result.output
    assert not (tmp_path / "sweeps").exists()
    again = invoke(runner, "launch", str(path), "--dry-run", "--max-trials", "7", "--time-budget", "30m")
    assert again.exit_code == 0 and "timing" not in again.output  # the same spec here: every cost kept
    assert again.output.split("price (")[1] == result.output.split("price (")[1]
    refused = invoke(runner, "launch", str(path), "--dry-run", "--calibrate")
    assert refused.exit_code == 2 and "give the cluster's --address" in refused.output


def test_no_price_times_no_model(runner, tmp_path, monkeypatch):
    """A researcher who wants the sweep to start at once asks for no price: no model is timed."""
    import sweeper.run.pricing

    def timed(*args: object) -> None:
        raise AssertionError("a model was timed")

    monkeypatch.setattr(sweeper.run.pricing, "sweep_price", timed)
    path = write_spec(tmp_path, tiny_spec())
    result = invoke(runner, "launch", str(path), "--dry-run", "--no-price")
    assert result.exit_code == 0, result.output
    assert "price: not asked (--no-price)" in result.output and "worker-hours" not in result.output
    both = invoke(
        runner, "launch", str(path), "--dry-run", "--no-price", "--calibrate", "--address", "ray://x:1"
    )
    assert both.exit_code == 2 and "--no-price prices nothing" in both.output


def test_a_launch_whose_price_fails_says_why_in_one_line_and_starts_unpriced(runner, tmp_path, monkeypatch):
    import sweeper.run.launch
    import sweeper.run.pricing

    def failing(*args: object, **kwargs: object) -> None:
        raise ConnectionError("the cluster at ray://x:1 did not answer\nRay's traceback")

    registered: list[object] = []

    def register(spec, where, profile, specs, first, priced):  # stops the launch once it is reached
        registered.append(priced)
        raise SystemExit(0)

    monkeypatch.setattr(sweeper.run.pricing, "sweep_price", failing)
    monkeypatch.setattr(sweeper.run.launch, "register", register)
    path = write_spec(tmp_path, tiny_spec())
    result = invoke(runner, "launch", str(path))
    assert result.exit_code == 0, result.output
    assert (
        f"{path}: price not measured here (ConnectionError: the cluster at ray://x:1 did not answer); "
        "the sweep starts unpriced" in result.output
    )
    assert registered == [None]


def test_bad_time_budget_option(runner, tmp_path):
    path = write_spec(tmp_path, tiny_spec())
    result = invoke(runner, "launch", str(path), "--time-budget", "later")
    assert result.exit_code == 2 and "--time-budget" in result.output


def test_unsupported_storage_dialect_exits_2(runner, tmp_path):
    path = write_spec(tmp_path, tiny_spec())
    result = invoke(runner, "launch", str(path), "--storage", "mysql://root@127.0.0.1/test")
    assert result.exit_code == 2 and "dialect 'mysql' is not supported" in result.output
    assert not (tmp_path / "sweeps").exists()


@pytest.mark.slow
def test_unreachable_database_exits_2_before_ray_and_hides_the_password(tmp_path):
    path = write_spec(tmp_path, tiny_spec())
    url = "postgresql+psycopg2://sweeper:hunter2@127.0.0.1:9/studies"
    result = run_cli(["launch", str(path), "--storage", url], tmp_path)
    assert result.returncode == 2
    assert "postgresql+psycopg2://sweeper:***@127.0.0.1:9/studies" in result.stderr
    assert "hunter2" not in result.stdout + result.stderr
    assert "Ray" not in result.stdout + result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


def test_unknown_sweep_exits_2(runner):
    result = invoke(runner, "status", "ghost-1")
    assert result.exit_code == 2 and "no sweep named 'ghost-1'" in result.output


def test_models_lists_hyperparameters_and_parameter_counts(runner):
    result = invoke(runner, "models", "--hidden-size", "100", "--input-size", "11")
    assert result.exit_code == 0, result.output
    assert "gru" in result.output and "lstm" in result.output
    gru = 3 * (11 * 100 + 100 * 100 + 2 * 100)
    assert f"{gru:,} parameters" in result.output


def test_tasks_lists_settings(runner):
    result = invoke(runner, "tasks")
    assert result.exit_code == 0
    assert "denoise" in result.output and "variant" in result.output and "copying" in result.output


def test_train_runs_one_model_without_ray(runner):
    result = invoke(
        runner,
        "train",
        "--task",
        "denoise",
        "--model",
        "gru",
        "--set",
        "hidden_size=8",
        "--set",
        "lr=0.01",
        "--set",
        "T=5",
        "--set",
        "valid_size=16",
        "--set",
        "iterations=4",
        "--set",
        "eval_every=2",
        "--set",
        "batch_size=8",
    )
    assert result.exit_code == 0, result.output
    steps = [line for line in result.output.splitlines() if line.startswith("step")]
    assert steps[0].split()[:2] == ["step", "1"] and "train_loss=" in steps[0]  # progress from the first step
    lines = [line for line in steps if "valid_loss=" in line]
    assert len(lines) == 2 and "valid_loss=" in lines[0] and "valid_accuracy_all_steps=" in lines[1]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--set", "hidden_size=big"], "hidden_size: expected a number"),
        (["--set", "capacity=2"], "does not accept capacity"),
        (["--set", "oops"], "expected NAME=VALUE"),
    ],
)
def test_train_rejects_bad_settings(runner, args, expected):
    result = invoke(runner, "train", "--task", "denoise", "--model", "gru", *args)
    assert result.exit_code == 2 and expected in result.output


def test_status_without_sweeps(runner):
    result = invoke(runner, "status")
    assert result.exit_code == 2 and "no sweeps" in result.output


def test_spec_round_trip_is_stored_yaml(tmp_path):
    from sweeper.spec.loading import parse_spec

    spec = parse_spec(yaml.safe_dump(tiny_spec()), "x.yaml")
    again = parse_spec(spec.to_yaml(), "stored")
    assert again.digest() == spec.digest()


def test_bad_spec_adds_no_rows_to_an_existing_database(runner, tmp_path):
    from sqlalchemy import func, select

    from sweeper.store.database import Store, SweepRecord

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    store = Store(url)
    store.add_sweep(SweepRecord(name="old-1", spec_name="old", spec_yaml="", spec_hash="", status="finished"))
    before = (tmp_path / "studies.db").read_bytes()
    path = write_spec(tmp_path, {**tiny_spec(), "models": ["gru", "nosuchmodel"]})
    result = invoke(runner, "launch", str(path), "--storage", url)
    assert result.exit_code == 2
    with store.session() as session:
        assert session.scalar(select(func.count()).select_from(SweepRecord)) == 1
    assert (tmp_path / "studies.db").read_bytes() == before
    store.dispose()


@pytest.mark.parametrize(
    ("task", "expected"),
    [("timit", "licensed"), ("denoise", "nothing to download"), ("nosuch", "nosuch")],
)
def test_data_fetch_refuses_what_cannot_be_downloaded(runner, tmp_path, task, expected):
    result = invoke(runner, "data", "fetch", task, "--data-dir", str(tmp_path / "data"))
    assert result.exit_code == 2
    assert expected in result.output


def test_data_fetch_into_a_file_is_refused(runner, tmp_path):
    (tmp_path / "afile").write_text("x")
    result = invoke(runner, "data", "fetch", "ptb_char", "--data-dir", str(tmp_path / "afile"))
    assert result.exit_code == 2 and "afile" in result.output


def test_a_server_that_fails_to_start_leaves_none_of_the_others_running(tmp_path):
    marker = tmp_path / "started"
    first = [
        sys.executable,
        "-c",
        f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); time.sleep(120)",
    ]
    with pytest.raises(FileNotFoundError):
        serve_until_stopped([first, [str(tmp_path / "no-such-server")]])
    left = [p for p in psutil.process_iter(["cmdline"]) if str(marker) in " ".join(p.info["cmdline"] or [])]
    assert left == []


def test_train_reports_the_kernel_of_an_orthogonal_model(runner):
    result = invoke(
        runner,
        "train",
        "--task",
        "denoise",
        "--model",
        "goru",
        *("--set", "hidden_size=8", "--set", "T=5", "--set", "valid_size=8"),
        *("--set", "iterations=2", "--set", "eval_every=2", "--set", "batch_size=4"),
    )
    assert result.exit_code == 0, result.output
    assert "kernel=loop" in result.output
    assert "kernel_path=loop" in result.output


@pytest.mark.slow
def test_train_starts_without_ray_optuna_mlflow_or_sqlalchemy(tmp_path):
    """A GPU image may carry only torch, Triton and the small packages: `sweeper train` (the
    benchmarks' way to run a trial) must not need what the sweep side needs."""
    blocked = ("ray", "optuna", "mlflow", "sqlalchemy")
    program = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "from sweeper.cli import main\n"
        "sys.argv = ['sweeper', 'train', '--task', 'denoise', '--model', 'goru', '--device', 'cpu',"
        " '--set', 'hidden_size=8', '--set', 'T=5', '--set', 'valid_size=8', '--set', 'test_size=8',"
        " '--set', 'iterations=2', '--set', 'eval_every=2', '--set', 'batch_size=4']\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "kernel=loop" in done.stdout and not set(blocked) & set(done.stderr.split())


def test_train_refuses_a_fused_kernel_where_it_cannot_run(runner, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    result = invoke(
        runner, "train", "--task", "denoise", "--model", "ncgru", "--device", "cpu", "--set", "kernel=fused"
    )
    assert result.exit_code == 2
    assert "kernel: 'fused' cannot run here: the device is cpu" in result.output
    assert "step" not in result.output


def test_a_fused_kernel_without_gpus_is_a_spec_error(runner, tmp_path):
    raw = tiny_spec(models=("gru", "goru"), per_model={"goru": {"kernel": "fused"}})
    result = invoke(runner, "launch", str(write_spec(tmp_path, raw)), "--dry-run")
    assert result.exit_code == 2
    assert "per_model.goru.kernel: 'fused' runs on a GPU" in result.output
    assert not (tmp_path / "sweeps").exists()


@pytest.mark.slow
def test_gpu_trials_on_a_local_ray_without_gpus_exit_2_naming_the_override(tmp_path, shared_launch):
    """A local Ray on a machine without GPUs could never start them: refused, nothing registered;
    with `--no-gpus` (the session's shared launch) the same trials train on the CPU."""
    spec = write_spec(tmp_path, tiny_spec(resources=GPU_RESOURCES))
    refused = run_cli(["launch", str(spec)], tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "resources: the trials ask for GPUs (0.125 for gru; 0.5 for lstm)" in refused.stderr
    assert "add --no-gpus to train on the CPU" in refused.stderr
    listing = run_cli(["list"], tmp_path)
    assert "tiny" not in listing.stdout
    _, on_cpu = shared_launch
    assert on_cpu.returncode == 0, on_cpu.stdout + on_cpu.stderr
    assert "--no-gpus" in on_cpu.args and "sweep gpus-1: finished" in on_cpu.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["launch"], "Missing argument 'CONFIGS...'"),
        (["status", "--no-such-option"], "No such option '--no-such-option'"),
        (["summarize", "x", "--format", "yaml"], "Invalid value for '--format'"),
    ],
)
def test_clicks_own_usage_errors_are_one_line_exit_2(runner, args, expected):
    """One error style: a usage error is `error: ...` on one line, exit 2, saying where to read more."""
    result = runner.invoke(main, args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]
    assert f"(see `sweeper {args[0]} --help`)" in lines[0]


def test_each_command_is_found_by_its_name_and_a_misspelt_one_is_answered_with_the_nearest(runner):
    """The group imports a command's module only when the command runs (`sweeper.cli.COMMANDS`):
    each name there finds its command, and a name that is none is still answered with the nearest."""
    for name in COMMANDS:
        assert main.get_command(click.Context(main), name).name == name
    result = runner.invoke(main, ["statu"])
    assert result.exit_code == 2
    assert (
        result.output.strip()
        == "error: No such command 'statu'. Did you mean 'status'? (see `sweeper --help`)"
    )


def test_read_only_commands_never_create_a_database_and_say_where_they_looked(runner, tmp_path):
    for args in (["status"], ["list"], ["summarize", "x"], ["resume", "x"]):
        result = invoke(runner, *args)
        assert result.exit_code == 2, args
        assert str(tmp_path / "sweeps" / "sweeper.db") in result.output
        assert "--storage or SWEEPER_STORAGE" in result.output
    assert not (tmp_path / "sweeps").exists()


def test_resuming_a_finished_sweep_says_so_without_starting_ray(runner, tmp_path, monkeypatch):
    import sweeper.run.launch

    monkeypatch.setattr(
        sweeper.run.launch, "connect", lambda *a: (_ for _ in ()).throw(AssertionError("Ray started"))
    )
    from sweeper.run.launch import create_sweep
    from sweeper.spec.loading import parse_spec
    from sweeper.store.database import Store

    store = Store(f"sqlite:///{tmp_path / 'sweeps' / 'sweeper.db'}")
    spec = parse_spec(yaml.safe_dump(tiny_spec()), "t.yaml")
    record = create_sweep(spec, store, f"sqlite:///{tmp_path / 'm.db'}", None, None, home=tmp_path)
    store.update_sweep(record.id, status="finished")
    result = invoke(runner, "resume", record.name)
    assert result.exit_code == 0, result.output
    assert f"sweep {record.name} is finished" in result.output


@pytest.mark.parametrize(
    ("mutate", "profile", "expected"),
    [
        (
            lambda s: s["params"].update(lr={"float": [1.0, 0.1]}),
            None,
            "params.lr: low 1.0 is above high 0.1",
        ),
        (
            lambda s: (s.pop("task"), s.update(profiles={"smoke": {"task": {"settings": {"T": 5}}}})),
            "smoke",
            "task: the spec has no task: section (profile smoke only adds to it)",
        ),
    ],
)
def test_a_bad_spec_is_one_line_naming_what_to_fix(runner, tmp_path, mutate, profile, expected):
    raw = tiny_spec()
    mutate(raw)
    args = ["launch", str(write_spec(tmp_path, raw)), *(["--profile", profile] if profile else [])]
    result = invoke(runner, *args)
    assert result.exit_code == 2
    problems = result.output.strip().splitlines()[1:]
    assert len(problems) == 1 and expected in problems[0]


def test_fetching_without_network_says_how_to_place_the_files_by_hand(runner, tmp_path, monkeypatch):
    from trainables import data

    def offline(url, dest):
        raise OSError("Name or service not known")

    monkeypatch.setattr(data, "download", offline)
    result = invoke(runner, "data", "fetch", "ptb_char", "--data-dir", str(tmp_path / "ptb"))
    assert result.exit_code == 2
    assert "Name or service not known" in result.output
    assert "Without network access here, download https://" in result.output
    assert f"copy the files into {tmp_path / 'ptb'}" in result.output


def test_a_diverging_run_is_one_line_and_a_failure(runner):
    settings = [
        "hidden_size=100",
        "lr=10",
        "optimizer=sgd",
        "iterations=20",
    ]  # overflows by step 8 at any thread count
    result = runner.invoke(
        main, ["train", "--task", "adding", "--model", "lstm", *(a for s in settings for a in ("--set", s))]
    )
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the run stopped: loss" in errors[0] and "gradient norm inf" in errors[0]
    assert "Traceback" not in result.output


def test_launch_prints_each_start_and_the_spec_can_turn_them_off() -> None:
    from sweeper.papers.points import first_points
    from tests.sweeper.papers.test_points import spec_of

    first, lines = first_points(spec_of())
    assert first["gru"] == [
        ("ncgru Table 2, gru, T=200", {"hidden_size": 100, "lr": 0.001, "optimizer": "adam"})
    ]
    assert "  gru starts from ncgru Table 2, gru, T=200: hidden_size=100, lr=0.001, optimizer=adam" in lines
    off = spec_of()
    off = off.model_copy(update={"sampler": off.sampler.model_copy(update={"paper_points": False})})
    assert first_points(off) == ({}, [])


def test_a_spec_shipped_with_its_ray_job_is_launched_from_the_jobs_metadata(runner, tmp_path, monkeypatch):
    """`sweeper job submit my.yaml` puts the file's text in the job's metadata; the driver reads it
    there (Ray hands it over in RAY_JOB_CONFIG_JSON_ENV_VAR), whatever files the head holds."""
    import json

    from tests.helpers import dump_spec

    text = dump_spec(tiny_spec(name="mine"))
    config = {"metadata": {"job_submission_id": "sweep-mine-1", "sweeper.spec": text}}
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps(config))
    result = invoke(runner, "launch", "mine.yaml", "--submitted-spec", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "study denoise/lstm" in result.output
    assert not (tmp_path / "mine.yaml").exists()
    bad = {"metadata": {"sweeper.spec": text.replace("trials: 4", "trials: -1")}}
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps(bad))
    refused = invoke(runner, "launch", "mine.yaml", "--submitted-spec", "--dry-run")
    assert refused.exit_code == 2 and "mine.yaml" in refused.output and "budget.trials" in refused.output
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR")
    alone = invoke(runner, "launch", "mine.yaml", "--submitted-spec", "--dry-run")
    assert alone.exit_code == 2 and "not a Ray job" in alone.output
