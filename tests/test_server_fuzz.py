"""Fuzz the REST API from its own OpenAPI document (schemathesis, bounded for CI).

Every operation gets generated requests — valid ones, and invalid ones — sent with an admin
key to the server running for real: no response may be a 5xx, and every response must match
the document (status code declared, body matching its schema, content type declared).

Each operation runs its own Hypothesis search (``MAX_EXAMPLES`` examples per mode); the
failures of all operations are reported together. One check is left out on purpose:
``positive_data_acceptance`` expects every schema-valid request to succeed, but the library
validates more than a JSON schema can say (names without control characters, the scope
grammar, configured collection names, filters on reserved keys), and answers those with a
documented 422 that names the field.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from conftest import LiveServer

#: Examples per operation and mode; ``OMOIDE_FUZZ_EXAMPLES`` raises it (the full run in
#: ``bench/reliability.py`` does).
MAX_EXAMPLES = int(os.environ.get("OMOIDE_FUZZ_EXAMPLES", "12"))


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: Any, value: Any) -> bytes:
    """Import bodies are JSON Lines: generated text goes on the wire as it is."""
    if isinstance(value, bytes):
        return value
    return (value if isinstance(value, str) else json.dumps(value)).encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def api_schema(live_server: LiveServer) -> Any:
    schema = schemathesis.openapi.from_url(f"{live_server.url}/openapi.json")
    # A body past server.max_body_bytes is refused with a 413 before it is parsed: invalid
    # data rejected too (generated over-long strings can pass the limit).
    rejection = schema.config.checks.negative_data_rejection
    rejection.expected_statuses = [*rejection.expected_statuses, "413"]
    return schema


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_api_keeps_its_contract(
    api_schema: Any, live_server: LiveServer, mode: GenerationMode
) -> None:
    headers = {"Authorization": f"Bearer {live_server.keys['admin']}"}
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 30

    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance])

        try:
            check()
        except Unsatisfiable:
            # An operation without parameters or body has no invalid form to generate.
            assert mode is GenerationMode.NEGATIVE, operation.label
        except (Exception, BaseExceptionGroup) as exc:  # try every operation, report all
            causes = "; ".join(f"{type(e).__name__}: {e}" for e in getattr(exc, "exceptions", ()))
            failures.append(f"{operation.label}: {type(exc).__name__}: {exc} {causes}")
    assert not failures, "\n\n".join(failures)
