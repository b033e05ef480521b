"""The sweep spec: valid configs parse into one typed object; every bad input names file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sweeper.spec.loading import SpecError, load_spec, parse_spec
from sweeper.spec.values import Choice, FloatRange, IntRange, parse_duration
from tests.helpers import tiny_spec

CONFIGS = Path(__file__).parents[3] / "configs"


def dump(spec: dict) -> str:
    return yaml.safe_dump(spec, sort_keys=False)


def errors_of(text: str, profile: str | None = None) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "bad.yaml", profile)
    return info.value.errors


def test_tiny_spec_resolves_each_models_space():
    spec = parse_spec(dump(tiny_spec()), "tiny.yaml")
    space = spec.space("gru")
    assert space["iterations"] == 30
    assert space["hidden_size"] == IntRange(int=(4, 16), log=True)
    assert isinstance(space["lr"], FloatRange)
    assert spec.resolved_objective().metric == "valid_loss"
    assert spec.resolved_objective().mode == "min"


def test_per_model_override_replaces_shared_value():
    raw = tiny_spec(per_model={"lstm": {"hidden_size": 12, "optimizer": {"choice": ["adam", "sgd"]}}})
    spec = parse_spec(dump(raw), "x.yaml")
    assert spec.space("lstm")["hidden_size"] == 12
    assert spec.space("lstm")["optimizer"] == Choice(choice=("adam", "sgd"))
    assert spec.space("gru")["hidden_size"] == IntRange(int=(4, 16), log=True)


def test_profile_overrides_are_merged_deeply():
    raw = tiny_spec(profiles={"smoke": {"task": {"settings": {"T": 3}}, "budget": {"trials": 2}}})
    spec = parse_spec(dump(raw), "x.yaml", profile="smoke")
    assert spec.task.settings["T"] == 3
    assert spec.task.settings["valid_size"] == 32
    assert spec.budget.trials == 2


def test_digest_changes_with_content_and_not_with_formatting():
    a = parse_spec(dump(tiny_spec()), "a.yaml")
    b = parse_spec(yaml.safe_dump(tiny_spec(), default_flow_style=True), "b.yaml")
    c = parse_spec(dump(tiny_spec(seed=1)), "c.yaml")
    assert a.digest() == b.digest() != c.digest()


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_validate_with_every_profile(path):
    spec = load_spec(path)
    for profile in spec.profiles:
        load_spec(path, profile)


@pytest.mark.parametrize(
    ("mutate", "where", "expected"),
    [
        (lambda s: s.update(colour="red"), "colour", "unknown key"),
        (lambda s: s["task"].update(name="nosuchtask"), "task.name", "unknown task 'nosuchtask'"),
        (lambda s: s["task"]["settings"].update(T=-5), "task.settings.T", "greater than or equal to 1"),
        (
            lambda s: s["task"]["settings"].update(variant="dirty"),
            "task.settings.variant",
            "'clean' or 'paper'",
        ),
        (lambda s: s["task"]["settings"].update(blur=1), "task.settings.blur", "unknown key"),
        (lambda s: s["models"].append("transformer"), "models.2", "unknown model 'transformer'"),
        (lambda s: s["params"].update(lr={"float": [0.1, 0.01]}), "params.lr", "low 0.1 is above high 0.01"),
        (lambda s: s["params"].update(lr={"float": [1e-3, 50.0]}), "params.lr", "outside the allowed range"),
        (lambda s: s["params"].update(hidden_size="big"), "params.hidden_size", "expected a number"),
        (lambda s: s["params"].update(optimizer="adamw"), "params.optimizer", "expected one of"),
        (lambda s: s["params"].update(colour=3), "params.colour", "no model of this sweep accepts"),
        (lambda s: s.update(per_model={"eurnn2": {"lr": 0.1}}), "per_model.eurnn2", "not in models"),
        (lambda s: s.update(per_model={"gru": {"capacity": 2}}), "per_model.gru.capacity", "accepts"),
        (lambda s: s["budget"].update(trials=0), "budget.trials", "greater than or equal to 1"),
        (lambda s: s["budget"].update(trials=-3), "budget.trials", "greater than or equal to 1"),
        (lambda s: s["budget"].update(time="soon"), "budget.time", "duration"),
        (lambda s: s["budget"].update(trials=10**30), "budget.trials", "less than or equal"),
        (lambda s: s.update(resources={"cpus": 0}), "resources.cpus", "greater than 0"),
        (lambda s: s.update(sampler="grid"), "sampler.name", "'tpe', 'gp', 'random' or 'cmaes'"),
        (
            lambda s: s.update(sampler="cmaes", params={**s["params"], "optimizer": {"choice": ["adam"]}}),
            "sampler.name",
            "cmaes",
        ),
        (lambda s: s.update(objective={"metric": "bleu", "mode": "max"}), "objective.metric", "reports"),
        (lambda s: s.update(name="has space"), "name", "pattern"),
        (lambda s: s["budget"].update(allocate="curves"), "budget.allocate", "curves is withdrawn"),
        (
            lambda s: s["budget"].update(drop_below=0.05),
            "budget.drop_below",
            "only allocate: curves read it, and it is withdrawn",
        ),
        (
            lambda s: s["budget"].update(allocate="race", drop_below=0.05),
            "budget.drop_below",
            "only allocate: curves read it, and it is withdrawn",
        ),
        (lambda s: s["budget"].update(race_rung=2), "budget.race_rung", "does nothing under allocate: equal"),
        (
            lambda s: s["budget"].update(race_exempt=["gru"]),
            "budget.race_exempt",
            "only allocate: race reads it",
        ),
        (
            lambda s: s["budget"].update(allocate="race", race_exempt=["gru", "lstm"]),
            "budget.race_exempt",
            "names every model",
        ),
    ],
)
def test_bad_specs_name_file_line_and_key(mutate, where, expected):
    raw = tiny_spec()
    mutate(raw)
    errors = errors_of(dump(raw))
    matching = [e for e in errors if f": {where}" in e]
    assert matching, errors
    assert any(expected in e for e in matching), errors
    assert all(e.startswith("bad.yaml:") for e in errors)
    assert all(e.split(":")[1].isdigit() for e in matching), errors


def test_error_line_points_at_the_offending_key():
    text = dump(tiny_spec()).replace("batch_size: 16", "batch_size: -16")
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "batch_size" in l)
    (error,) = errors_of(text)
    assert error.startswith(f"bad.yaml:{line}: params.batch_size")


def test_profile_error_points_into_the_profile():
    raw = tiny_spec(profiles={"smoke": {"budget": {"trials": 0}}})
    text = dump(raw)
    errors = errors_of(text, profile="smoke")
    line = len(text.splitlines()) - text.splitlines()[::-1].index("      trials: 0")
    assert any(e.startswith(f"bad.yaml:{line}: budget.trials (profile smoke)") for e in errors), errors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- a\n- b\n", "must be a mapping"),
        ("just a string", "must be a mapping"),
        ("name: [unclosed\n", "not valid YAML"),
        ("a: &x [1, 2]\nb: *x\n", "anchors and aliases"),
        ("name: !!python/object/apply:os.system ['true']\n", "not valid YAML"),
    ],
)
def test_hostile_or_broken_yaml_is_a_clean_error(text, expected):
    assert any(expected in e for e in errors_of(text))


def test_unknown_profile_lists_the_known_ones():
    raw = tiny_spec(profiles={"smoke": {}})
    assert any("no profile 'fast' (profiles: smoke)" in e for e in errors_of(dump(raw), profile="fast"))


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("2h", 7200), ("1d", 86400), (45, 45)]
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "-1m", "3 weeks", True, "1e9d"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_a_stored_spec_with_a_setting_its_allocation_ignores_still_loads() -> None:
    """Refused at launch, but a sweep launched before the check keeps loading for status and resume."""
    raw = tiny_spec(budget={"trials": 4, "drop_below": 0.05})
    assert errors_of(dump(raw))
    assert parse_spec(dump(raw), "sweep s-1", trusted=True).budget.drop_below == 0.05


def test_the_withdrawn_curves_allocation_is_refused_in_a_new_spec_and_read_from_a_stored_one() -> None:
    """One line naming the file, the line and the field; a sweep stored with it still loads."""
    raw = tiny_spec(budget={"trials": 4, "allocate": "curves", "drop_below": 0.05})
    text = dump(raw)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "allocate: curves" in l)
    errors = errors_of(text)
    (refused,) = [e for e in errors if "budget.allocate" in e]
    assert refused.startswith(f"bad.yaml:{line}: budget.allocate: curves is withdrawn (")
    assert refused.endswith("; use allocate: equal or race") and "\n" not in refused
    stored = parse_spec(text, "sweep s-1", trusted=True).budget
    assert (stored.allocate, stored.drop_below) == ("curves", 0.05)
