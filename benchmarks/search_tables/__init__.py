"""The search judged on recorded learning curves instead of days of training.

`record` trains every (task, model) of the search benchmark at a scrambled Sobol design over its
study's own space, plus the papers' points, through `trainables.train.train`, and keeps every
evaluation in a table under `benchmarks/results/blackbox/`; `retime` measures every recorded
configuration's pace again on one clock (`clock`), as the runs came from machines of different
speed. `replay` runs the service's own search (the studies, samplers, per-model ASHA, race and
warm start a launch builds) against that table on a simulated clock with W workers, and
`verdicts` judges each strategy against the table's ground truth over many paired seeds.

    python -m benchmarks.search_tables.record --jobs 2             # grows the table; resumable
    python -m benchmarks.search_tables.retime --jobs 2             # its clock; resumable
    python -m benchmarks.search_tables.replay --seeds 50           # every strategy, W = 4 and 8
"""
