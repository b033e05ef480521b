"""Per-study early stopping: a trial is ranked only against trials of its own study."""

from __future__ import annotations

from types import SimpleNamespace

from ray.tune.schedulers import ASHAScheduler, TrialScheduler

from sweeper.run.search.pruning import PerStudyScheduler


def trial(trial_id: str, model: str) -> SimpleNamespace:
    return SimpleNamespace(trial_id=trial_id, config={"model": model})


def test_a_weak_model_is_not_pruned_by_a_strong_one():
    scheduler = PerStudyScheduler(
        lambda: ASHAScheduler(
            time_attr="step", metric="loss", mode="min", max_t=100, grace_period=10, reduction_factor=2
        )
    )
    strong = [trial(f"s{i}", "gru") for i in range(2)]
    weak = [trial(f"w{i}", "lstm") for i in range(2)]
    for t in strong + weak:
        scheduler.on_trial_add(None, t)
    assert scheduler.on_trial_result(None, strong[0], {"step": 10, "loss": 0.1}) == TrialScheduler.CONTINUE
    assert scheduler.on_trial_result(None, strong[1], {"step": 10, "loss": 0.2}) == TrialScheduler.STOP
    # far worse than every GRU trial, but the first of its own study at this rung
    assert scheduler.on_trial_result(None, weak[0], {"step": 10, "loss": 5.0}) == TrialScheduler.CONTINUE
    assert scheduler.on_trial_result(None, weak[1], {"step": 10, "loss": 6.0}) == TrialScheduler.STOP
    assert set(scheduler._schedulers) == {"gru", "lstm"}


class _Searcher:
    """The searcher's one answer the papers' points rule reads: the Optuna trial behind a Tune trial."""

    def __init__(self, trials: dict[str, object]) -> None:
        self.trials = trials

    def trial_of(self, trial_id: str) -> object:
        return self.trials.get(trial_id)


def _points_scheduler(baseline: float | None, others: int = 1):
    import optuna

    from sweeper.run.search.pruning import make_scheduler
    from sweeper.spec.loading import parse_spec
    from sweeper.store.trial_record import PAPER_POINT_ATTR
    from tests.helpers import dump_spec, tiny_spec

    raw = tiny_spec(
        models=("gru",),
        scheduler={"name": "asha", "grace_period": 10, "reduction_factor": 3, "judge_paper_points": True},
    )
    spec = parse_spec(dump_spec(raw), "s.yaml")  # rungs 10 and 30, the last
    study = optuna.create_study()
    study.enqueue_trial({}, user_attrs={PAPER_POINT_ATTR: "a paper's point"})
    point = study.ask()
    rest = [study.ask() for _ in range(others)]
    searcher = _Searcher({"p": point, **{f"o{k}": t for k, t in enumerate(rest)}})
    scheduler = make_scheduler(spec, searcher, baseline)
    for name in ("p", *(f"o{k}" for k in range(others))):
        scheduler.on_trial_add(None, trial(name, "gru"))
    return scheduler, point, rest


def _reported(scheduler, point, step: int, value: float) -> str:
    """The point's report, as Tune hands it to the scheduler and then the searcher to the study."""
    decision = scheduler.on_trial_result(None, trial("p", "gru"), {"step": step, "valid_loss": value})
    point.report(value, step)
    return decision


def test_a_papers_point_that_stayed_at_the_baseline_stops_once_its_studys_trials_left_it():
    """ASHA goes on with a study's first trial at every rung, and its first trials are the papers'
    points. One still at the baseline (0.5) at the first rung goes on while no other trial has
    shown learning there (copying's curves leave the baseline late), and stops at its next report
    once one has."""
    scheduler, point, (other,) = _points_scheduler(baseline=0.5)
    assert _reported(scheduler, point, 10, 0.52) == "CONTINUE"  # nothing to judge it by yet
    other.report(0.55, 10)
    assert _reported(scheduler, point, 20, 0.51) == "CONTINUE"  # the other is at the baseline too
    scheduler, point, (other,) = _points_scheduler(baseline=0.5)
    assert _reported(scheduler, point, 10, 0.52) == "CONTINUE"
    other.report(0.3, 10)
    assert _reported(scheduler, point, 20, 0.4) == "STOP"  # it learned since, but trailed at the rung
    scheduler, point, (other,) = _points_scheduler(baseline=0.5)
    assert _reported(scheduler, point, 10, 0.45) == "CONTINUE"
    other.report(0.3, 10)
    assert _reported(scheduler, point, 20, 0.4) == "CONTINUE"  # it had left the baseline there


def test_without_a_baseline_a_papers_point_below_ashas_cutoff_at_a_rung_stops():
    """Parenthesis has no memoryless baseline: ASHA's own rule, once three of its study's trials
    (η) are recorded at the rung: below their top third, it stops."""
    scheduler, point, rest = _points_scheduler(baseline=None, others=3)
    assert _reported(scheduler, point, 10, 0.4) == "CONTINUE"
    for other, value in zip(rest[:2], (0.2, 0.3), strict=True):
        other.report(value, 10)
    assert _reported(scheduler, point, 15, 0.4) == "CONTINUE"  # two recorded: too few
    rest[2].report(0.35, 10)
    assert _reported(scheduler, point, 20, 0.4) == "STOP"
    scheduler, point, rest = _points_scheduler(baseline=None, others=3)
    assert _reported(scheduler, point, 10, 0.1) == "CONTINUE"
    for other, value in zip(rest, (0.2, 0.3, 0.35), strict=True):
        other.report(value, 10)
    assert _reported(scheduler, point, 20, 0.1) == "CONTINUE"  # ahead of them all
