"""The database and what it holds, at the bottom of the package: the engine, the sweep registry
tables and Optuna's storage (`database`), where records live by default (`locations`), what a
finished trial leaves in its study (`trial_record`), the words for where things stand (`states`)
and credentials hidden in URLs (`credentials`).

Imports nothing else of `sweeper`, nor Ray, torch or MLflow.
"""
