"""What the service itself costs: start-up, a trial's overhead and hand-off, workers, utilization,
checkpoints, the study database's settings, data loading, a sweep on a busy machine, and a sweep's
price against what it spent."""
