"""What `--dry-run` prints: a sweep's resolved plan, started nowhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweeper.space import describe
from sweeper.spec import SweepSpec
from sweeper.store import redact

if TYPE_CHECKING:
    from sweeper.reproduction import Reproduction, Row


def plan_text(spec: SweepSpec, storage_url: str, tracking_uri: str, address: str | None) -> str:
    """Studies, spaces, budgets, resources and where the results would go."""
    objective = spec.resolved_objective()
    budget = spec.budget
    lines = [
        f"sweep {spec.name}: task {spec.task.name} {spec.task.settings}",
        f"  objective: {objective.mode} {objective.metric}",
        f"  sampler: {spec.sampler.name} (seed {spec.sampler.seed if spec.sampler.seed is not None else spec.seed})"
        f", scheduler: {spec.scheduler.name}",
        f"  budget: {budget.trials} trials per study"
        + (f", {budget.iterations:,} training steps per study" if budget.iterations else "")
        + (f", {budget.study_time:.0f}s of training per study" if budget.study_time else "")
        + (f", {budget.trial_time:.0f}s per trial" if budget.trial_time else "")
        + (f", {budget.time:.0f}s in all" if budget.time else "")
        + (f", at most {budget.max_concurrent} at once" if budget.max_concurrent else ""),
        f"  resources per trial: {spec.resources.cpus:g} CPU, {spec.resources.gpus:g} GPU"
        + "".join(
            f"; {m}: {r['cpu']:g} CPU, {r['gpu']:g} GPU"
            for m, r in ((m, spec.resources.for_model(m)) for m in spec.resources.per_model)
        ),
        f"  storage: {redact(storage_url)}",
        f"  tracking: {redact(tracking_uri)}",
        f"  ray: {address or 'a new local Ray instance'}",
    ]
    for model in spec.models:
        lines.append(f"  study {spec.task.name}/{model}:")
        declared = spec.declared(model)
        for name, value in spec.space(model).items():
            lines.append(f"    {name}: {describe(value, declared[name].at_most)}")
    return "\n".join(lines)


def matching_text(derived: dict[str, tuple[int, int] | str]) -> str:
    """Each matched model's derived hidden size, or why it is derived only at launch."""
    lines = [
        f"  matched {m}: hidden_size {d[0]} ({d[1]:,} parameters)"
        for m, d in derived.items()
        if isinstance(d, tuple)
    ]
    lines += [f"  matching {m}: derived at launch ({d})" for m, d in derived.items() if isinstance(d, str)]
    return "\n".join(lines)


SHOWN = ("hidden_size", "rho", "optimizer", "lr", "orth_lr", "batch_size", "iterations")


def reproduction_text(repro: Reproduction, specs: list[SweepSpec], estimate: bool) -> str:
    """The runs of a reproduction, part by part, with what each costs where it is measured: the
    seconds of a few training steps here, times its steps and seeds (evaluation not counted)."""
    table = repro.table
    runs = sum(row.runs_of == row.index for row in repro.rows) * repro.seeds
    lines = [
        f"reproduce {table.paper} {table.table}: {table.title}",
        f"  {len(repro.rows)} rows in {len(repro.parts)} sweep(s), {repro.seeds} seeds each: {runs} runs"
        + (f" (profile {repro.profile})" if repro.profile else ""),
    ]
    total_steps, total_seconds, timed = 0, 0.0, True
    for part, spec in zip(repro.parts, specs, strict=True):
        lines.append(f"  sweep {spec.name}: task {table.task} {part.task_settings}")
        for row in part.rows:
            if row.runs_of != row.index:
                lines.append(f"    {row.label}: the runs of row {row.runs_of} ({row.reference.split} split)")
                continue
            shown = ", ".join(f"{k}={row.params[k]}" for k in SHOWN if k in row.params)
            extra = ", ".join(
                f"{k}={v}"
                for k, v in row.params.items()
                if k not in SHOWN and k.removeprefix("task.") not in part.task_settings
            )
            steps = row.params["iterations"] * repro.seeds
            total_steps += steps
            cost = ""
            if estimate:
                seconds = _step_seconds(row, spec)
                if seconds is None:
                    timed = False
                    cost = "; not timed (see preflight)"
                else:
                    total_seconds += seconds * steps
                    cost = f"; {seconds * 1000:.0f} ms/step, {_duration(seconds * steps)} for its seeds"
            lines.append(f"    {row.label}: {shown}{cost}")
            if extra:
                lines.append(f"      also {extra}")
    summary = f"  total: {total_steps:,} training steps"
    if estimate and timed:
        summary += f", about {_duration(total_seconds)} one run at a time on this machine"
    lines.append(summary)
    skipped = [f"  not run: {ref.model} ({ref.split}, {ref.published}): {why}" for ref, why in repro.skipped]
    return "\n".join(lines + skipped)


def _step_seconds(row: Row, spec: SweepSpec) -> float | None:
    from sweeper.spec import trial_config
    from trainables.step_time import seconds_per_step

    config = trial_config(spec, row.model, row.params, 0)
    config["device"] = "cpu" if not spec.resources.for_model(row.model)["gpu"] else "auto"
    try:
        return seconds_per_step(config)
    except (OSError, ValueError):  # data not present: preflight says which files
        return None


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
