"""Schemathesis against the service's own OpenAPI schema, authenticated.

Runs against the real `chatsvc serve` child (real HTTP, real SQLite, the
loopback Ollama and scripted LLM) with valid and invalid generated requests:
no 5xx on any route, responses and their content types match the schema
(evals/reliability/fuzz.py, whose longer run this is a bounded copy of).
The `fault` fixture then fails the test on any traceback in the child's log.
Bounded: a few examples per operation, derandomized, no shrinking phase.

(schemathesis' own pytest plugin reads `node._nodeid`, gone in pytest 9, so the
operations are driven through `as_strategy` and Hypothesis directly.)
"""

from __future__ import annotations

import schemathesis
from schemathesis import GenerationMode

from evals.reliability.fuzz import MODES, NOTHING, fuzz_operation

EXAMPLES_PER_OPERATION = 6


def test_no_5xx_and_responses_match_the_schema(fault):
    schema = schemathesis.openapi.from_url(f"{fault.url}/schema/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    labels = {op.label for op in operations}
    assert {"POST /api/chat", "GET /api/facts", "PATCH /api/memory/{memory_id}",
            "POST /v1/chat/completions"} <= labels, labels
    failures = {}
    for operation in operations:
        for mode in MODES:
            found = fuzz_operation(operation, mode, fault.url, fault.tokens["alice"],
                                   EXAMPLES_PER_OPERATION, repeatable=True)
            if found == NOTHING:  # nothing to make invalid (no inputs)
                assert mode is GenerationMode.NEGATIVE, operation.label
            elif found is not None:
                failures[f"{operation.label} ({mode.value})"] = found
    assert failures == {}
