"""The answer a sweep ends with: which model won, by how much, what failed and why, what next."""

from __future__ import annotations

from sweeper.results.odds import Odds
from sweeper.results.separation import suggested_seeds
from sweeper.results.summaries import StudySummary, cost_line, missing_models, sorted_best_first
from sweeper.spec.loading import stored_spec
from sweeper.store.database import SweepRecord


def _against(value: float, reference: float) -> str:
    """`value` beside `reference`: the difference, as a share of `reference` too."""
    gap = value - reference
    share = f" ({100 * abs(gap) / abs(reference):.1f}%)" if reference else ""
    return f"{abs(gap):.4g}{share} {'lower' if gap < 0 else 'higher'} than"


def _beats(value: float, reference: float, mode: str) -> bool:
    return value < reference if mode == "min" else value > reference


def all_failed(summaries: list[StudySummary]) -> bool:
    """No trial of any study ran to an objective, and some failed."""
    return not any(s.counts["COMPLETE"] + s.counts["PRUNED"] for s in summaries) and any(
        s.counts["FAIL"] for s in summaries
    )


def answer_notes(record: SweepRecord, summaries: list[StudySummary], odds: Odds | None) -> list[str]:
    """What the verdict says beside its winner, and the report below its rows: the odds, each
    model a race dropped and why, and the price at launch against what the trials spent."""
    lines = [] if odds is None else odds.lines(record.name)
    lines += [raced_out(s, odds) for s in summaries if s.race_stopped]
    cost = cost_line(summaries)
    return lines if cost is None else [*lines, cost]


def raced_out(summary: StudySummary, odds: Odds | None) -> str:
    """A model the race stopped is unfinished, not beaten: the line gives why it stopped and its
    chance of tying for the win on the trials the sweep ended with (what the odds count it as)."""
    line = f"{summary.model}: {summary.race_stopped}"
    if odds is not None and summary.model in odds.p_level:
        line += f"; unfinished, P(within the tie margin of the best) now {odds.p_level[summary.model]:.2f}"
    return line


def verdict(
    record: SweepRecord, summaries: list[StudySummary], baseline: float | None, odds: Odds | None = None
) -> list[str]:
    """The winner and its margins, with its odds (the chance it is the true winner, or the
    models it ties with), each model whose trials all failed with its most common reason, and the
    commands that go on from here. A model without a complete trial (the budget ran out first, or
    its trials failed) cannot be ranked: the verdict says it covers only the rest."""
    objective = stored_spec(record).resolved_objective()
    scored = [s for s in sorted_best_first(summaries, objective.mode) if s.best_value is not None]
    missing = missing_models(summaries)
    lines = []
    if scored:
        winner = scored[0]
        among = f" of the {len(scored)} models with a complete trial" if missing else ""
        line = f"winner{among}: {winner.model}, best {objective.metric} {winner.best_value:.5g} (trial #{winner.best_trial})"
        if len(scored) > 1:
            runner_up = scored[1]
            line += (
                f", {_against(winner.best_value, runner_up.best_value)} the runner-up "
                f"{runner_up.model} ({runner_up.best_value:.5g})"
            )
        if baseline is not None:
            line += (
                f", {_against(winner.best_value, baseline)} the task's memoryless baseline ({baseline:.4g})"
            )
            if not _beats(winner.best_value, baseline, objective.mode):
                line += ": no model learned more than the baseline"
        lines.append(line)
    lines += answer_notes(record, summaries, odds)
    if missing:
        lines.append(
            f"partial: no complete trial for {', '.join(missing)}"
            + (f"; the verdict covers only {', '.join(s.model for s in scored)}" if scored else "")
        )
    for s in summaries:
        finished = s.counts["COMPLETE"] + s.counts["PRUNED"]
        if not finished and s.counts["FAIL"] and s.common_failure is not None:
            reason, times = s.common_failure
            lines.append(
                f"{s.model}: all {s.counts['FAIL']} trials failed; most often ({times}×): {reason.splitlines()[0]}"
            )
    name = record.name
    seeds = suggested_seeds(0 if odds is None else odds.confirmed_seeds)
    commands = {
        f"sweeper summarize {name}": "best hyperparameters and sizes",
        f"sweeper confirm {name} --seeds {seeds}": "fresh seeds until one is shown ahead",
        f"sweeper report {name}": "beside the papers, with figures",
        f"sweeper ui {name}": "the runs in MLflow",
        f"sweeper best {name} --out best": "the best trained networks",
    }
    width = max(map(len, commands)) + 2
    lines += ["next:", *(f"  {command:<{width}}# {why}" for command, why in commands.items())]
    return lines
