"""What `--dry-run` prints: a sweep's resolved plan, started nowhere."""

from __future__ import annotations

from sweeper.spec.space import describe
from sweeper.spec.sweep import SweepSpec
from sweeper.store.credentials import redact


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
        + (f", {budget.study_time:.0f}s of trials' worker time per study" if budget.study_time else "")
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
