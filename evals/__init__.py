"""Evaluations and benchmarks (each writes its figures under evals/results/)."""
