"""The papers' published results: `results.yaml` (the numbers, one entry per table cell) and
`published` (their typed form, checked as loaded)."""
