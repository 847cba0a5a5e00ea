"""A longer schemathesis run than the test suite's, against a real `chatsvc serve`.

tests/reliability/test_fuzz_schema.py gives every operation 6 derandomized examples, so
CI stays fast and repeatable. This runs every operation of the live service's
`/schema/openapi.json` as a user and as an admin, valid and invalid requests,
`--examples` each, with fresh random seeds and shrinking. The checks are the same:
no 5xx, responses and content types as the schema says. A failure is recorded and the
run goes on; at the end the service's log is searched for tracebacks.

    python -m evals.reliability.fuzz [--examples 40] [--only "POST /api/chat" ...]

Writes evals/results/fuzz.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from chatsvc.testing import ScriptedUpstream, ServiceProcess
from evals._machine import describe

RESULTS = Path(__file__).resolve().parents[1] / "results"
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


NOTHING = "nothing to generate"  # a negative run of an operation without inputs


def fuzz_operation(operation, mode: GenerationMode, base_url: str, token: str,
                   examples: int, *, repeatable: bool = False) -> str | None:
    """None when every example passed, NOTHING, or why an example failed. `repeatable`
    (the test suite's): the same examples every run, not shrunk."""
    phases = [Phase.explicit, Phase.generate] + ([] if repeatable else [Phase.shrink])

    @settings(max_examples=examples, deadline=None, database=None, phases=phases,
              derandomize=repeatable, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(mode))
    def run(case):
        response = case.call(base_url=base_url, timeout=30,
                             headers={"Authorization": f"Bearer {token}"})
        case.validate_response(response, checks=CHECKS)

    try:
        run()
    except Unsatisfiable:
        return NOTHING
    except BaseException as exc:  # schemathesis raises its failures as exception groups
        if isinstance(exc, KeyboardInterrupt):
            raise
        return str(exc)[:4000]
    return None


def fuzz_service(service: ServiceProcess, tokens: dict[str, str], examples: int,
                 only: list[str]) -> list[dict]:
    schema = schemathesis.openapi.from_url(f"{service.url}/schema/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    runs = []
    for operation in operations:
        if only and not any(part in operation.label for part in only):
            continue
        for user, token in tokens.items():
            for mode in MODES:
                started = time.monotonic()
                found = fuzz_operation(operation, mode, service.url, token, examples)
                runs.append({"operation": operation.label, "user": user, "mode": mode.value,
                             "seconds": round(time.monotonic() - started, 1),
                             "generated": found != NOTHING,
                             "failure": None if found == NOTHING else found})
                print(f"{operation.label} as {user}, {mode.value}: "
                      f"{'FAILED' if runs[-1]['failure'] else found or 'ok'}", flush=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m evals.reliability.fuzz")
    parser.add_argument("--examples", type=int, default=40, help="per operation, user, mode")
    parser.add_argument("--only", nargs="*", default=[],
                        help="operations whose label contains one of these")
    args = parser.parse_args()
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="chatsvc-fuzz-"))
    with ScriptedUpstream() as upstream:
        service = ServiceProcess(root / "data", {
            "CHATSVC_EMBEDDINGS": "local", "LLM_BASE_URL": upstream.base_url,
            "LLM_API_KEY": "scripted", "LLM_TIMEOUT": "3", "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
            "CHATSVC_LOG_LEVEL": "WARNING"}, log_path=root / "service.log")
        tokens = {"user": service.add_user("alice"),
                  "admin": service.add_user("root", admin=True)}
        with service:
            runs = fuzz_service(service, tokens, args.examples, args.only)
            tracebacks = service.crashes()
    result = {"machine": describe(), "examples": args.examples, "only": args.only,
              "seconds": round(time.monotonic() - started), "runs": runs,
              "tracebacks": tracebacks}
    write(result)


def write(result: dict) -> None:
    (RESULTS / "fuzz.json").write_text(json.dumps(result, indent=2) + "\n")
    runs = [r for r in result["runs"] if r["generated"]]
    failed = [r for r in runs if r["failure"]]
    operations = sorted({r["operation"] for r in runs})
    lines = [
        "# Schema fuzzing (schemathesis, live service)", "",
        f"{result['machine']}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        "Generated by `python -m evals.reliability.fuzz"
        + (f" --examples {result['examples']}" if result["examples"] != 40 else "")
        + (" --only " + " ".join(f'"{part}"' for part in result["only"])
           if result["only"] else "") + "`.", "",
        f"{len(operations)} operations x 2 users (a user, an admin) x valid and invalid "
        f"requests, up to {result['examples']} examples each, random seeds, shrinking on; "
        f"{result['seconds']} s ({len(result['runs']) - len(runs)} invalid-request runs had "
        "nothing to make invalid). Checks: no 5xx, response bodies and content types as "
        "the schema says.", "",
        f"**Runs that failed: {len(failed)} of {len(runs)}. Tracebacks in the service's "
        f"log: {len(result['tracebacks'])}.**", "",
    ]
    for run in failed:
        lines += [f"## {run['operation']} as {run['user']}, {run['mode']}", "", "```",
                  run["failure"], "```", ""]
    for traceback in result["tracebacks"]:
        lines += ["## Traceback in the service's log", "", "```", traceback[:4000], "```", ""]
    (RESULTS / "fuzz.md").write_text("\n".join(lines))
    print(f"wrote {RESULTS / 'fuzz.md'}")


if __name__ == "__main__":
    main()
