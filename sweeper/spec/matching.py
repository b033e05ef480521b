"""Parameter matching: derive each model's hidden size so all models have the same size.

The papers compare models at roughly equal parameter counts (denoise: LSTM 90, GRU 100, scoRNN
200, GORU 128, NC-GRU 118 units). A spec says `hidden_size: {match: {parameters: N}}` or
`{match: {model: gru, hidden_size: 100}}`; `trainables.sizing` counts the whole network
each model would build for the task (recurrent part, embeddings, heads) and picks the closest
hidden size.
"""

from __future__ import annotations

from typing import Any

import torch

from sweeper.spec.loading import SpecError
from sweeper.spec.sweep import SweepSpec
from sweeper.spec.values import Match, is_fixed
from trainables.registry import MODELS, TASKS
from trainables.sizing import hidden_size_for_budget, network_parameters


def _fixed_model_values(spec: SweepSpec, model: str) -> dict[str, Any]:
    declared = MODELS.get(model).all_hyperparams
    return {k: v for k, v in spec.space(model).items() if k in declared and is_fixed(v)}


def resolve_matching(spec: SweepSpec) -> tuple[SweepSpec, dict[str, tuple[int, int]]]:
    """The spec with every `{match: ...}` hidden size replaced by the derived one.

    Returns the new spec and, per matched model, (hidden size, parameter count). Raises SpecError
    when the task cannot be built here (a file task without its data: matching needs its
    vocabulary).
    """
    matched = {
        m: spec.space(m)["hidden_size"]
        for m in spec.models
        if isinstance(spec.space(m).get("hidden_size"), Match)
    }
    if not matched:
        return spec, {}
    try:
        task = TASKS.get(spec.task.name).create(
            spec.task.settings, batch_size=1, seed=0, device=torch.device("cpu")
        )
    except Exception as exc:
        raise SpecError([f"parameter matching needs task {spec.task.name!r} built here: {exc}"]) from None
    derived: dict[str, tuple[int, int]] = {}
    raw = spec.model_dump(mode="json")
    raw.setdefault("per_model", {})
    for model, match in matched.items():
        target = match.match
        if target.parameters is not None:
            budget = target.parameters
        else:
            if target.model not in MODELS:
                raise SpecError([f"hidden_size.match.model: unknown model {target.model!r}"])
            budget = network_parameters(task, target.model, target.hidden_size, {})
        try:
            derived[model] = hidden_size_for_budget(task, model, budget, _fixed_model_values(spec, model))
        except ValueError as exc:
            raise SpecError([f"parameter matching for {model}: {exc}"]) from None
        raw["per_model"].setdefault(model, {})["hidden_size"] = derived[model][0]
    if isinstance(raw["params"].get("hidden_size"), dict):  # every model now has its own
        del raw["params"]["hidden_size"]
    resolved = SweepSpec.model_validate(raw)
    return resolved, derived
