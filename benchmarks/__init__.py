"""The project's measurements, in three rooms by what they measure: `search_tables` (the search
judged on recorded learning curves, and the sweeps trained for real it is checked against), `gpu`
(the fused scans and the trials on a GPU) and `overheads` (what the service itself costs: its
start-up, a trial's overhead, workers, checkpoints, the database, a busy machine, a sweep's
price). Each writes its figures as data under `results/` (`figures_file`)."""
