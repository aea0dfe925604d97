"""Property-based API fuzzing with schemathesis against the live OpenAPI document (bounded for CI).

Every operation gets `MAX_EXAMPLES` generated requests with a valid token: no answer may be a 5xx. Each is
also replayed without credentials and with a wrong token (schemathesis' `ignored_auth` check): the API
must refuse it. Driven through schemathesis' Python API (its pytest plugin does not load under pytest 9).
"""

from __future__ import annotations

import warnings

from hypothesis import HealthCheck, given, settings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import schemathesis
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import ignored_auth

from api.main import create_app

MAX_EXAMPLES = 12


def test_no_operation_answers_5xx_or_ignores_auth(cluster, make_identity):
    cluster.settings.rate_limit_per_s = 0  # limits off: this is about correctness, not abuse
    cluster.settings.max_queued_per_team = None
    who, token = make_identity("alice", "vision")
    cluster.submit(who, {"command": "echo fuzz"})
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(cluster))
    operations = [result.ok() for result in schema.get_all_operations()]
    headers = {"Authorization": f"Bearer {token}"}

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: schemathesis.Case) -> None:
            if case.query and str(case.query.get("follow")).lower() == "true":
                # a followed log streams until its task ends, and nothing runs the queued tasks here:
                # followed logs have tests of their own (tests/api/test_logs.py)
                case.query["follow"] = "false"
            case.call_and_validate(headers=headers, checks=[not_a_server_error, ignored_auth])

        fuzz()

    assert len(operations) >= 10
