"""Evaluation harnesses and benchmarks; each writes its results under evals/results/."""
