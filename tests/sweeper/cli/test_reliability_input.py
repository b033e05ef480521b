"""Hostile and broken input: every bad spec or storage URL is a clear error, exit code 2, and
nothing is written, however the input was made; random mutations never escape as a traceback.

`sweeper launch` runs in a fresh working directory holding only the spec, so "nothing written"
is checked as "the directory still holds only the spec".
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sweeper.run.launch
from sweeper.cli import main
from sweeper.spec.loading import SpecError, _NoAliasLoader, parse_spec
from sweeper.spec.sweep import SweepSpec
from tests.helpers import tiny_spec

SPEC_FILE = "sweep.yaml"
Launch = Callable[..., Result]  # (spec text or bytes, *options) -> the CLI's result


# libyaml's emitter where PyYAML has it: the 1 MB spec below takes the pure-Python one a second, at
# collection, in every test process
SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump(spec: dict[str, Any]) -> str:
    return yaml.dump(spec, Dumper=SAFE_DUMPER, sort_keys=False)


def with_params(**params: Any) -> str:
    spec = tiny_spec()
    spec["params"].update(params)
    return dump(spec)


def billion_laughs() -> str:
    """Nine levels of nine aliases each: 9**9 strings if a loader expanded them."""
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 9):
        name, previous = chr(ord("a") + level), chr(ord("a") + level - 1)
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines) + "\n"


def nested(depth: int) -> str:
    return f"name: tiny\nmodels: {'[' * depth}{']' * depth}\n"


@pytest.fixture
def launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Launch:
    """`sweeper launch` on a spec text or bytes, in a working directory of its own.

    Joining Ray is replaced by a failure: every input here must be refused before it, and a
    regression must fail this test rather than start a sweep inside pytest.
    """
    monkeypatch.chdir(tmp_path)
    for name in ("SWEEPER_STORAGE", "SWEEPER_TRACKING_URI", "SWEEPER_RAY_ADDRESS"):
        monkeypatch.delenv(name, raising=False)

    def reached_ray(*args: Any) -> None:
        raise AssertionError("the input was accepted: launch went on to join Ray")

    monkeypatch.setattr(sweeper.run.launch, "connect", reached_ray)

    def run(content: str | bytes, *options: str) -> Result:
        path = tmp_path / SPEC_FILE
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return CliRunner().invoke(main, ["launch", str(path), *options])

    return run


def assert_refused(result: Result, tmp_path: Path, *fragments: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [SPEC_FILE]


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        pytest.param("- lstm\n- gru\n", ["must be a mapping"], id="a list"),
        pytest.param("just a string\n", ["must be a mapping"], id="a scalar"),
        pytest.param("", ["must be a mapping"], id="empty"),
        pytest.param(billion_laughs(), ["anchors and aliases"], id="billion laughs"),
        pytest.param(
            "name: !!python/object/apply:os.system ['touch pwned']\n",
            ["not valid YAML", "python/object/apply:os.system"],
            id="python object apply",
        ),
        pytest.param(
            "!!python/object/new:subprocess.Popen [[touch, pwned]]\n",
            ["not valid YAML", "python/object/new:subprocess.Popen"],
            id="python object new",
        ),
        pytest.param("name: !!python/name:os.system\n", ["python/name:os.system"], id="python name"),
        pytest.param(
            dump(tiny_spec(budget={"trials": 10**100})), ["budget.trials", "less than"], id="trials 1e100"
        ),
        pytest.param(
            dump(tiny_spec(task={"name": "denoise", "settings": {"T": 1e308}})),
            ["task.settings.T"],
            id="T 1e308",
        ),
        pytest.param(
            with_params(lr=1e400), ["params.lr", "expected a finite number, got inf"], id="lr 1e400 is inf"
        ),
        pytest.param(with_params(lr={"float": [1e-3, 1e400]}), ["params.lr", "finite"], id="range up to inf"),
        pytest.param(
            with_params(hidden_size={"int": [4, 10**100]}),
            ["params.hidden_size", "outside the allowed range"],
            id="hidden size 1e100",
        ),
        pytest.param(dump(tiny_spec(seed=2**64)), ["seed"], id="seed 2**64"),
        pytest.param(
            dump(tiny_spec(budget={"trials": 2, "time": 1e308})), ["budget.time", "at most a year"], id="time"
        ),
        pytest.param(dump(tiny_spec(budget={"trials": -5})), ["budget.trials"], id="negative trials"),
        pytest.param(
            dump(tiny_spec(budget={"trials": 2, "time": "-1h"})), ["budget.time"], id="negative time"
        ),
        pytest.param(
            dump(tiny_spec(budget={"trials": 2, "max_concurrent": -1})),
            ["budget.max_concurrent"],
            id="negative concurrency",
        ),
        pytest.param(dump(tiny_spec(resources={"cpus": -1})), ["resources.cpus"], id="negative cpus"),
        pytest.param(dump(tiny_spec(colour="red")), ["colour", "unknown key"], id="unknown key"),
        pytest.param(
            dump(tiny_spec(budget={"trials": 2, "colour": "red"})),
            ["budget.colour", "unknown key"],
            id="unknown nested key",
        ),
        pytest.param(
            dump(tiny_spec(task={"name": "denoise", "settings": {"colour": "red"}})),
            ["task.settings.colour"],
            id="unknown task setting",
        ),
        pytest.param(
            dump(tiny_spec(models=["gru", "nosuchmodel"])),
            ["models.1", "unknown model 'nosuchmodel'", "registered:"],
            id="unknown model",
        ),
        pytest.param(
            dump(tiny_spec(task={"name": "nosuchtask"})), ["unknown task 'nosuchtask'"], id="unknown task"
        ),
        pytest.param(
            dump(tiny_spec(description="x" * 1_000_001)), ["larger than 1000000 bytes"], id="1 MB spec"
        ),
        pytest.param(b"name: \xff\xfe tiny\n", ["cannot read"], id="not UTF-8"),
        pytest.param(
            nested(2000),
            ["not valid YAML"],
            id="deeply nested",
        ),
    ],
)
def test_hostile_spec_exits_2_naming_the_file_and_writes_nothing(
    launch: Launch, tmp_path: Path, content: str | bytes, fragments: list[str]
) -> None:
    assert_refused(launch(content), tmp_path, f"{tmp_path / SPEC_FILE}:", *fragments)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        (
            "mysql://root:tiger@127.0.0.1/test",
            "dialect 'mysql' is not supported; use one of: sqlite, postgresql",
        ),
        ("oracle+cx_oracle://scott:tiger@127.0.0.1/orcl", "dialect 'oracle' is not supported"),
        ("mssql+pyodbc://sa:tiger@127.0.0.1/db", "dialect 'mssql' is not supported"),
        ("redis://127.0.0.1:6379/0", "dialect 'redis' is not supported"),
    ],
)
def test_unsupported_storage_option_exits_2_and_hides_the_password(
    launch: Launch, tmp_path: Path, url: str, fragment: str
) -> None:
    result = launch(dump(tiny_spec()), "--storage", url)
    assert_refused(result, tmp_path, fragment)
    assert "tiger" not in result.output


def test_unsupported_storage_in_the_spec_exits_2(launch: Launch, tmp_path: Path) -> None:
    """A spec may name its database (without credentials): the dialect is checked all the same."""
    result = launch(dump(tiny_spec(storage="mysql://root@127.0.0.1/test")))
    assert_refused(result, tmp_path, "dialect 'mysql' is not supported")


def test_storage_that_is_no_url_exits_2(launch: Launch, tmp_path: Path) -> None:
    assert_refused(
        launch(dump(tiny_spec()), "--storage", "no url at all"), tmp_path, "is not a SQLAlchemy URL"
    )


def test_a_missing_profile_among_names_that_are_not_strings_is_a_clean_error(
    launch: Launch, tmp_path: Path
) -> None:
    """YAML reads `1:` or `null:` as a number or None; listing the known profiles must cope."""
    result = launch(dump(tiny_spec(profiles={1: {}})), "--profile", "smoke")
    assert_refused(result, tmp_path, "no profile 'smoke' (profiles: 1)")


def test_a_data_directory_that_is_a_file_is_refused_when_the_spec_is_read(tmp_path: Path) -> None:
    """A file where a directory belongs is wrong on every node, so the spec can refuse it at once."""
    data_file = tmp_path / "ptb.txt"
    data_file.write_text("not a directory\n")
    spec = tiny_spec(task={"name": "ptb_char", "settings": {"data_dir": str(data_file)}})
    with pytest.raises(SpecError) as refused:
        parse_spec(dump(spec), "f.yaml")
    assert any("task.settings.data_dir" in e and "is a file" in e for e in refused.value.errors)


ROOT = Path(__file__).parents[3]
SOURCES = sorted(path for name in ("sweeper", "trainables") for path in (ROOT / name).rglob("*.py"))
SAFE_LOADERS = {"SafeLoader", "CSafeLoader", "_NoAliasLoader"}


def _dotted(node: ast.expr | None) -> str:
    """`yaml.load`, `eval`, `yaml.SafeLoader`: the dotted name an expression spells, else ""."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def unsafe_calls(source: str) -> list[str]:
    """Calls that could run what a spec says: an unsafe YAML loader, eval/exec, a shell."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        keywords = {k.arg: k.value for k in node.keywords}
        loader = keywords.get("Loader", node.args[1] if len(node.args) > 1 else None)
        if name in ("yaml.load", "yaml.load_all") and _dotted(loader).rsplit(".", 1)[-1] not in SAFE_LOADERS:
            found.append(f"line {node.lineno}: {name} without a safe loader")
        elif name in ("yaml.unsafe_load", "yaml.full_load", "eval", "exec", "os.system", "os.popen"):
            found.append(f"line {node.lineno}: {name}")
        elif isinstance(keywords.get("shell"), ast.Constant) and keywords["shell"].value is True:
            found.append(f"line {node.lineno}: {name} with shell=True")
    return found


def test_the_source_check_sees_unsafe_calls() -> None:
    """The check below proves nothing unless it recognises what it looks for."""
    source = (
        "yaml.load(t, Loader=yaml.Loader)\nyaml.load(t, yaml.FullLoader)\neval(x)\n"
        "subprocess.run(c, shell=True)\nyaml.load(t, Loader=yaml.SafeLoader)\n"
    )
    assert [line.split(": ", 1)[1] for line in unsafe_calls(source)] == [
        "yaml.load without a safe loader",
        "yaml.load without a safe loader",
        "eval",
        "subprocess.run with shell=True",
    ]


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_service_has_no_unsafe_loader_eval_or_shell(path: Path) -> None:
    """Specs are read with a safe loader only, and nothing is evaluated or run through a shell."""
    assert unsafe_calls(path.read_text(encoding="utf-8")) == []


def test_the_spec_loader_is_a_safe_loader() -> None:
    assert issubclass(_NoAliasLoader, yaml.SafeLoader)


# ---- property-based: random mutations of a valid spec ---------------------------------------

BASE_SPEC = tiny_spec(
    description="every section filled, so that mutations reach every validator",
    objective={"metric": "valid_loss", "mode": "min"},
    sampler={"name": "tpe", "seed": 1},
    resources={"cpus": 1, "gpus": 0},
    per_model={"gru": {"lr": {"float": [1e-3, 1e-2]}}},
    profiles={"smoke": {"budget": {"trials": 2}, "params": {"iterations": 20}}},
    storage="sqlite:///sweeps/sweeper.db",
    tracking_uri="sqlite:///sweeps/mlflow.db",
)
BASE_SPEC["params"]["optimizer"] = {"choice": ["adam", "rmsprop_tf"]}

KEYS = st.one_of(
    st.sampled_from(["name", "task", "models", "params", "int", "float", "choice", "log", "trials", "smoke"]),
    st.text(max_size=12),
    st.integers(-3, 3),
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=16),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


def _slots(node: Any) -> list[tuple[dict | list, Any]]:
    """Every (container, key) of a nested spec, so a mutation can land anywhere."""
    found: list[tuple[dict | list, Any]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        found.append((node, key))
        found.extend(_slots(value))
    return found


def _containers(node: Any) -> list[dict]:
    found = [node] if isinstance(node, dict) else []
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        found.extend(_containers(child))
    return found


@st.composite
def mutated_specs(draw: st.DrawFn) -> dict[str, Any]:
    """The base spec with one to five mutations: a key dropped, a value replaced by one of another
    type, a key added, or a value buried in garbage (a list, a mapping, a distribution)."""
    spec = copy.deepcopy(BASE_SPEC)
    for _ in range(draw(st.integers(1, 5))):
        operation = draw(st.sampled_from(["drop", "replace", "add", "nest"]))
        slots = _slots(spec)
        if operation == "add" or not slots:
            draw(st.sampled_from(_containers(spec)))[draw(KEYS)] = draw(JSON_VALUES)
            continue
        container, key = draw(st.sampled_from(slots))
        if operation == "drop":
            del container[key]
        elif operation == "replace":
            container[key] = draw(JSON_VALUES)
        else:
            wrapper = draw(st.sampled_from(["list", "int", "float", "choice", "garbage"]))
            value = container[key]
            if wrapper == "list":
                container[key] = [value, draw(JSON_VALUES)]
            elif wrapper == "garbage":
                container[key] = {draw(KEYS): value, draw(KEYS): draw(JSON_VALUES)}
            else:
                container[key] = {wrapper: value}
    return spec


@pytest.mark.slow
# derandomized: the same 300 examples on every run, so a CI failure is a regression, never luck
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(spec=mutated_specs(), profile=st.sampled_from([None, "smoke"]))
def test_random_mutations_give_a_spec_or_a_located_spec_error(
    spec: dict[str, Any], profile: str | None
) -> None:
    """Never a traceback: either the spec validates (and what is stored re-validates the same, as
    `resume` reads it back), or every error line names the file."""
    try:
        parsed = parse_spec(yaml.safe_dump(spec, sort_keys=False), "f.yaml", profile)
    except SpecError as exc:
        assert exc.errors
        assert all(message.startswith("f.yaml") for message in exc.errors), exc.errors
        return
    assert isinstance(parsed, SweepSpec)
    assert parse_spec(parsed.to_yaml(), "stored").digest() == parsed.digest()
