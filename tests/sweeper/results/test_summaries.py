"""A study's summary: the price set beside what its trials spent in their workers."""

from __future__ import annotations

from sweeper.results.summaries import StudySummary, cost_line


def summary(model: str, priced: tuple[float, float], worker_seconds: float, seconds: float) -> StudySummary:
    return StudySummary(
        f"s/denoise/{model}",
        "denoise",
        model,
        {},
        0,
        None,
        seconds=seconds,
        worker_seconds=worker_seconds,
        predicted_hours=priced,
    )


def test_the_cost_is_the_trials_time_in_their_workers_not_their_wait_for_one() -> None:
    # 1.8 + 1.8 = 3.6 s in the workers: 0.001 worker-hours, within the price, though the trials
    # counted 36 s from their suggestion, most of it queued for a free worker
    studies = [summary("gru", (0.0004, 0.0006), 1.8, 18.0), summary("lstm", (0.0004, 0.0006), 1.8, 18.0)]
    assert cost_line(studies) == (
        "cost: priced at 0.0008-0.0012 worker-hours at launch, spent 0.001 in the workers (within)"
    )
    studies[0].worker_seconds = 7.2
    assert cost_line(studies).endswith("spent 0.0025 in the workers (2.1x its high end)")
    assert cost_line([summary("gru", (0.0004, 0.0006), 1.296, 2.0)]).endswith("(0.9x its low end)")
    assert cost_line([StudySummary("s/denoise/gru", "denoise", "gru", {}, 0, None)]) is None


def test_a_large_sweeps_cost_reads_in_plain_numbers() -> None:
    assert cost_line([summary("gru", (200.0, 1800.0), 3600 * 1534.2, 0.0)]) == (
        "cost: priced at 200-1,800 worker-hours at launch, spent 1,534 in the workers (within)"
    )
