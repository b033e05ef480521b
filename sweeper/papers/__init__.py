"""Reproduction of published tables: the runs a table needs, built from its recorded settings
(`table_runs`), where each of their values comes from — the paper or a reading (`provenance`) —,
running them over seeds (`running`), their outcome beside the paper's numbers (`outcome`), and
the fidelity page rendered from it all (`fidelity`, docs/fidelity.md).

May import `sweeper.run`, `sweeper.results`, `sweeper.spec` and `sweeper.store`; never
`sweeper.cli`.
"""
