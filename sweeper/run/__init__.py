"""Everything that needs Ray: launching and resuming sweeps (`launch`), confirmation runs
(`confirm`) and Ray jobs (`jobs`), over three families: the search over the studies (`search`:
the searcher, samplers, pruning, race, warm start, repair), MLflow (`tracking`: runs, kept
weights, back-fill) and Ray Tune (`tune`: the run loop, the trial function, warm workers,
checkpoints, patches, progress). Within it, each layer imports only those below it:
`confirm` > `launch` > `search` > `tracking` > `tune`, `jobs` beside `tune`.

May import `sweeper.results`, `sweeper.spec` and `sweeper.store`; never `sweeper.papers` or
`sweeper.cli`.
"""
