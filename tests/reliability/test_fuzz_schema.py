"""Schemathesis against the service's own OpenAPI schema, authenticated.

Runs against the real `chatsvc serve` child (real HTTP, real SQLite, the
loopback Ollama and scripted LLM) with valid and invalid generated requests:
no 5xx on any route, responses and their content types match the schema.
The `fault` fixture then fails the test on any traceback in the child's log.
Bounded: a few examples per operation, derandomized, no shrinking phase.

(schemathesis' own pytest plugin reads `node._nodeid`, gone in pytest 9, so the
operations are driven here through `as_strategy` and Hypothesis directly.)
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from tests.reliability.conftest import auth

EXAMPLES_PER_OPERATION = 6
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
FUZZ = settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True,
                phases=[Phase.explicit, Phase.generate], database=None,
                suppress_health_check=list(HealthCheck))


def fuzz(operation, mode: GenerationMode, base_url: str, headers: dict) -> None:
    @FUZZ
    @given(case=operation.as_strategy(mode))
    def run(case):
        response = case.call(base_url=base_url, headers=headers, timeout=15)
        case.validate_response(response, checks=CHECKS)

    run()


def test_no_5xx_and_responses_match_the_schema(fault):
    schema = schemathesis.openapi.from_url(f"{fault.url}/schema/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    labels = {op.label for op in operations}
    assert {"POST /api/chat", "GET /api/facts", "PATCH /api/memory/{memory_id}",
            "POST /v1/chat/completions"} <= labels, labels
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                fuzz(operation, mode, fault.url, auth(fault, "alice"))
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE  # nothing to make invalid (no inputs)
            except Exception as exc:
                raise AssertionError(f"{operation.label} ({mode.value}): {exc}") from exc
