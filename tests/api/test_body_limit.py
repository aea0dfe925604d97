"""A request body over the cap (NIGHTSHIFT_MAX_REQUEST_MB) is a 413 that says what to do, and creates
nothing, whether its size is declared or it arrives in chunks."""

from __future__ import annotations

import json

from api.main import create_app
from scheduler.store.identity import create_token
from tests.api.conftest import TestClient, bearer


def test_a_body_over_the_cap_is_refused_declared_or_chunked_and_creates_no_task(make_cluster):
    cluster = make_cluster(max_request_mb=0.01)  # 10 KiB
    headers = {
        **bearer(create_token(cluster.factory, user="alice", team="vision")),
        "Content-Type": "application/json",
    }
    big = json.dumps({"command": "true", "gpus": 0, "env": {"PAD": "x" * 20_000}}).encode()
    small = json.dumps({"command": "true", "gpus": 0}).encode()

    def in_chunks():
        for start in range(0, len(big), 4096):
            yield big[start : start + 4096]

    with TestClient(create_app(cluster, ui=False)) as client:
        declared = client.post("/api/v1/tasks", content=big, headers=headers)
        chunked = client.post("/api/v1/tasks", content=in_chunks(), headers=headers)
        fine = client.post("/api/v1/tasks", content=small, headers=headers)

    for refused in (declared, chunked):
        assert refused.status_code == 413, refused.text
        assert refused.json()["detail"].startswith("the request body is over 0.01 MiB: send fewer tasks")
    assert fine.status_code == 201, fine.text
    assert cluster.tasks.count_by_status() == {"queued": 1}
