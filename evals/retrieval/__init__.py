"""Retrieval evaluation: a shipped EN + ZH corpus, labelled queries, recall@5 and MRR.

Run `python -m evals.retrieval`; figures go to evals/results/retrieval.{json,md}.
"""
