"""Evaluation harnesses and benchmarks (prompt cache, retrieval)."""
