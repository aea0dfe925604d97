"""GET /estimate with a number that is no number (NaN, inf): a 422 that says so, not 'less than or equal'."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("param", "value"),
    [("estimated_minutes", "NaN"), ("time_limit_minutes", "inf"), ("gpu_memory_gb", "-inf")],
)
def test_an_estimate_for_a_number_that_is_no_number_is_refused_plainly(client, alice, param, value):
    response = client.get("/api/v1/estimate", params={param: value}, headers=alice)

    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail.startswith(f"{param} must be a number of") and repr(value) in detail, detail
