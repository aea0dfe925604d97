"""GET /estimate for a task pinned as a spec pins one: to a GPU model or a node ("could I get 2 A100s now?"),
and the chat's words for it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("four_gpu_node")


def _estimate(client, headers, **params) -> dict:
    response = client.get("/api/v1/estimate", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_model_or_node_the_cluster_has_starts_now_and_one_it_lacks_says_why(client, alice):
    on_the_model = _estimate(client, alice, gpus=2, gpu_model="24GB")
    on_the_node = _estimate(client, alice, gpus=2, node="node-a")
    elsewhere = _estimate(client, alice, gpus=2, gpu_model="A100")
    nowhere = _estimate(client, alice, gpus=2, node="node-z")

    assert (on_the_model["wait_s"], on_the_model["reason"]) == (0.0, "starts now")
    assert (on_the_node["wait_s"], on_the_node["reason"]) == (0.0, "starts now")
    assert elsewhere["start"] is None and elsewhere["reason"] == (
        "cannot start on this cluster: no GPU model matches 'A100' (the GPUs here are: Simulated GPU 24GB)"
    )
    assert nowhere["start"] is None and nowhere["reason"] == (
        "cannot start on this cluster: there is no node named 'node-z'"
    )


def test_a_pin_longer_than_a_spec_field_is_refused_with_the_field_named(client, alice):
    response = client.get("/api/v1/estimate", params={"gpu_model": "x" * 65}, headers=alice)

    assert response.status_code == 422 and "gpu_model" in response.text
