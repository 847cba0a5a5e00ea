"""Fact extraction by the LLM: pending messages -> facts, mentions, supersessions ->
a regenerated fact sheet. Triggered by POST /api/facts/extract, `chatsvc
extract-facts` and a background schedule."""

from chatsvc.extraction._job import ExtractionResult, FactExtractor
from chatsvc.extraction._prompt import KnownFact, Request, build_request
from chatsvc.extraction._schedule import schedule
from chatsvc.extraction._support import Support, support
from chatsvc.extraction._verify import MIN_COVERAGE, REASONS, Quote, Shown, Verdict, verify

__all__ = ["MIN_COVERAGE", "REASONS", "ExtractionResult", "FactExtractor", "KnownFact", "Quote",
           "Request", "Shown", "Support", "Verdict", "build_request", "schedule", "support",
           "verify"]
