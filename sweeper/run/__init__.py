"""Everything that needs Ray: launching and resuming sweeps (`launch`), the Tune run loop
(`runtime`), the searcher over the studies (`search`), schedulers and study policy, the trial
function (`trial`), warm worker processes, checkpoints, Tune patches, MLflow tracking and its
back-fill (`tracking`, `sync`), confirmation runs (`confirm`), Ray jobs (`jobs`) and progress.

May import `sweeper.results`, `sweeper.spec` and `sweeper.store`; never `sweeper.papers` or
`sweeper.cli`.
"""
