"""Fact extraction by the LLM: pending messages -> facts, mentions, supersessions ->
a regenerated fact sheet. Triggered by POST /api/facts/extract, `chatsvc
extract-facts` and a background schedule."""

from chatsvc.extraction._job import ExtractionResult, FactExtractor
from chatsvc.extraction._prompt import KnownFact, Request, build_request
from chatsvc.extraction._schedule import schedule

__all__ = ["ExtractionResult", "FactExtractor", "KnownFact", "Request", "build_request",
           "schedule"]
