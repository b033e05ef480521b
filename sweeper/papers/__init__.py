"""Reproduction of published tables: the runs a table needs, built from its recorded settings
(`table_runs`), running them over seeds (`running`), and their outcome beside the paper's
numbers (`outcome`).

May import `sweeper.run`, `sweeper.results`, `sweeper.spec` and `sweeper.store`; never
`sweeper.cli`.
"""
