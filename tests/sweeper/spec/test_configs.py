"""The shipped configs: every one dry-runs, with and without its smoke profile, with one study per
model, the smoke profile of every generated task stays tiny enough for a few CPU minutes, and the
GPU packing figures their comments cite are the committed GPU run's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sweeper.cli import main
from sweeper.spec.loading import load_spec
from sweeper.spec.values import IntRange
from tests import corpora
from trainables.catalog import load_all
from trainables.registry import TASKS
from trainables.train import TRAINING

ROOT = Path(__file__).parents[3]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
PACKING_RUN = "benchmarks/results/gpu_acceptance-cuda-captured.json"  # the GPU run the comments cite
PACKING_MEASURE = "times_one_per_gpu"  # its packing rows' trials/hour over 1 per GPU
# "gpus: 0.5  # 2 per GPU; GORU measured 1.55x at 2, 1.94x at 4, 2.14x at 8"
PACKED = re.compile(
    r"gpus: (?P<share>[\d.]+)\}?  # (?P<per_gpu>\d+) per GPU; (?P<model>\w+) measured (?P<cited>.+)$"
)
CITED = re.compile(r"(?P<ratio>\d+\.\d\d)x at (?P<per_gpu>\d+)")
SMOKE_MAX_ITERATIONS = 200  # of a task without a sequence length
SMOKE_MAX_STEPS = 10_000  # time steps a smoke trial trains on a sequence task: iterations × T
SMOKE_MAX_T = 50
SMOKE_MAX_HIDDEN = 32


def upper(value: object) -> int:
    """The largest value a fixed int or an {int: [low, high]} range can take."""
    return value.int[1] if isinstance(value, IntRange) else int(value)


def is_generated(path: Path) -> bool:
    """A config whose task makes its own data (no data_dir to read files from). Read from the YAML's
    task name, not the validated spec: this runs at collection, in every test process, and the
    tests below load and validate each config anyway."""
    load_all()
    task = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["task"]["name"]
    return "data_dir" not in TASKS.get(task).settings.model_fields


GENERATED = [path for path in CONFIGS if is_generated(path)]


def test_every_built_in_task_has_a_config():
    # Named, not read from the registry: plugins loaded by other tests may register more tasks.
    tasks = {load_spec(path).task.name for path in CONFIGS}
    assert tasks == {
        "adding",
        "babi",
        "copying",
        "denoise",
        "parenthesis",
        "ptb_char",
        "ptb_word",
        "shortest_path",
        "timit",
        "wikitext2",
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Small files where the file tasks' configs look (their data_dir, relative to the launch),
    written once: every dry run only reads them."""
    folder = tmp_path_factory.mktemp("configs") / "data"
    corpora.write_ptb(folder / "ptb")
    corpora.write_wikitext(folder / "wikitext-2")
    corpora.write_babi(folder / "babi", tasks=(1,))
    corpora.write_speech(folder / "timit", count=128)
    return folder


@pytest.mark.parametrize("profile", [None, "smoke"])
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_dry_run_lists_one_study_per_model(path, profile, data, tmp_path, monkeypatch):
    """The paper-scale specs are previewed for a cluster (`--address`: its GPUs and data are its
    own, priced by the recorded GPU figures); the smoke profiles for this machine, with their data
    here, unpriced (the price's timings are tested on their own)."""
    monkeypatch.chdir(tmp_path)  # the default storage lives under ./sweeps; a dry run writes none
    (tmp_path / "data").symlink_to(data, target_is_directory=True)
    where = ["--profile", profile, "--no-price"] if profile else ["--address", "auto"]
    args = ["launch", str(path), "--dry-run", *where]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    spec = load_spec(path, profile)
    studies = re.findall(rf"^  study {re.escape(spec.task.name)}/(\S+):$", result.output, re.M)
    assert studies == spec.models
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_smoke_profile_is_small(path):
    spec = load_spec(path, "smoke")
    assert spec.budget.trials <= 2
    assert spec.budget.time is not None and spec.budget.time <= 600
    inner = spec.task.settings.get("inner_hidden_size")
    assert inner is None or inner <= SMOKE_MAX_HIDDEN
    for model in spec.models:
        space = spec.space(model)
        hidden = space.get("hidden_size", TRAINING["hidden_size"].default)
        assert upper(hidden) <= SMOKE_MAX_HIDDEN, f"{model}: hidden_size {hidden}"


def test_the_generated_tasks_are_found():
    assert {load_spec(path).task.name for path in GENERATED} == {
        "adding",
        "copying",
        "denoise",
        "parenthesis",
        "shortest_path",
    }


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.name)
def test_generated_task_smoke_trials_are_short(path):
    spec = load_spec(path, "smoke")
    length = spec.task.settings.get("T", 0)
    assert length <= SMOKE_MAX_T
    for model in spec.models:
        iterations = spec.space(model).get("iterations", TRAINING["iterations"].default)
        if length:
            assert upper(iterations) * length <= SMOKE_MAX_STEPS, (
                f"{model}: iterations {iterations}, T {length}"
            )
        else:
            assert upper(iterations) <= SMOKE_MAX_ITERATIONS, f"{model}: iterations {iterations}"


def measured_packing() -> dict[tuple[str, int], float]:
    """The committed GPU run's packing measure, by (model, trials per GPU)."""
    rows = json.loads((ROOT / PACKING_RUN).read_text())["figures"]["packing"]
    return {(row["model"], row["per_gpu"]): row[PACKING_MEASURE] for row in rows}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_packing_comments_cite_the_committed_gpu_run(path: Path) -> None:
    """Each fraction of a GPU a config asks for carries a comment: the trials per GPU it makes and
    the committed GPU run's measure of that packing, every figure rounded to two decimals as the
    run holds it; the config names the run, its GPU and its measure."""
    text = path.read_text()
    resources = load_spec(path).resources
    shares = {share for share in (resources.gpus, *(r.gpus for r in resources.per_model.values())) if share}
    fractions = {share for share in shares if share < 1}
    commented = [found for line in text.splitlines() if (found := PACKED.search(line))]
    assert {float(found["share"]) for found in commented} == fractions
    if "per GPU" in text:
        assert PACKING_RUN in text, f"{path.name} speaks of packing without citing {PACKING_RUN}"
    if fractions:
        run = json.loads((ROOT / PACKING_RUN).read_text())
        assert run["machine"]["gpu"] in text and PACKING_MEASURE in text
    measured = measured_packing()
    for found in commented:
        assert float(found["share"]) * int(found["per_gpu"]) == 1, found.group(0)
        cited = CITED.findall(found["cited"])
        assert ", ".join(f"{ratio}x at {k}" for ratio, k in cited) == found["cited"], found.group(0)
        for ratio, per_gpu in cited:
            assert ratio == f"{measured[found['model'].lower(), int(per_gpu)]:.2f}", found.group(0)
    stray = [line for line in text.splitlines() if re.search(r"\d\.\d+x\b", line) and not PACKED.search(line)]
    assert not stray, f"figures outside the cited form: {stray}"
