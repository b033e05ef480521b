"""Benchmark tasks; `trainables.tasks.declared` declares them without importing their code."""
