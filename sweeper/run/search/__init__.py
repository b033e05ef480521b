"""The search over a sweep's studies: the searcher that hands out trials and records how each
ended (`searcher`, on the bookkeeping it shares with confirmations: `recorder`), how a study
draws its trials (`samplers`), when a trial stops early (`pruning`), how the models share the
budget (`race`), what a new sweep takes from an earlier one (`warm_start`), and how a study a
stopped driver left is made ready to run again (`repair`).

May import `sweeper.run.tracking` and `sweeper.run.tune`, and the layers below `sweeper.run`.
"""
