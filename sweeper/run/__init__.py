"""Everything that needs Ray: launching and resuming sweeps (`launch`), the Tune run loop
(`runtime`), the searcher over the studies (`search`) and what it shares with the confirmation
runs (`recorder`), the studies' best networks kept in MLflow (`weights`), schedulers and study
policy, the trial function (`trial`), warm worker processes, checkpoints, Tune patches, MLflow
tracking and its back-fill (`tracking`, `sync`), confirmation runs (`confirm`), Ray jobs (`jobs`)
and progress.

May import `sweeper.results`, `sweeper.spec` and `sweeper.store`; never `sweeper.papers` or
`sweeper.cli`.
"""
