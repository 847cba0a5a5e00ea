"""Fact extraction quality: the verifier's thresholds (thresholds.py), the adversarial
conversations (adversarial.jsonl), and `python -m evals.extraction`: junk rate, LoCoMo
gold recall and scripted bad answers refused, through the HTTP API of a real
`chatsvc serve` (docs/evals.md)."""
