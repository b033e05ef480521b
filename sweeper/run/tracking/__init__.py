"""MLflow: the sweep's experiment and runs as trials progress (`tracker`), each study's best
network kept as an MLflow model (`weights`), and the back-fill after an outage (`sync`).

May import `sweeper.run.tune` (for the trial's weight file's name), and the layers below
`sweeper.run`; never `sweeper.run.search`.
"""
