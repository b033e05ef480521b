"""What a sweep is, before anything runs: the typed spec read from YAML and validated once
(`sweep`, `values`, `loading`), the search space each model's study samples (`space`), hidden
sizes matched across models (`matching`), the dry-run plan (`plan`) and what would stop the
trials (`preflight`).

May import `sweeper.store` and `trainables` (the registries and declarations); never Ray, Optuna's
runs or MLflow.
"""
