"""Fact extraction quality: verifier thresholds, adversarial conversations, junk rate."""
