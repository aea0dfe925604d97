"""A team's fair-share standing in GET /quota, `nightshift quota` and the chat, as Slurm's `sshare` shows it:
its decayed use against an equal share, and the priority credit that gives its waiting tasks."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient

from api.main import create_app
from assistant.agent import Assistant
from assistant.client import AssistantClient
from tests.assistant.conftest import AppTransport, new_endpoints
from tests.conftest import wait_until


def test_the_team_that_used_the_gpus_lately_gets_less_credit_than_the_one_waiting(
    cluster, make_identity, start_worker, tmp_path: Path
):
    # Given team vision's task running on the only GPU, and a task of team nlp waiting for it
    alice, alice_token = make_identity("alice", "vision")
    bob, bob_token = make_identity("bob", "nlp")
    start_worker("1x24")
    flag = tmp_path / "done"
    spec = {"command": f"while [ ! -f {flag} ]; do sleep 0.05; done", "workdir": str(tmp_path)}
    running, _ = cluster.submit(alice, spec)
    wait_until(lambda: cluster.tasks.get_any(running.id).status == "running")
    cluster.submit(bob, {"command": "true", "workdir": str(tmp_path)})  # nlp waits: two teams share
    time.sleep(1.0)  # some GPU-seconds of use

    # When each team asks for its quota (and bob asks the chat)
    try:
        with TestClient(create_app(cluster)) as api:
            vision = api.get("/api/v1/quota", headers={"Authorization": f"Bearer {alice_token}"}).json()
            nlp = api.get("/api/v1/quota", headers={"Authorization": f"Bearer {bob_token}"}).json()
            client = AssistantClient(
                "http://testserver", bob_token, transport=AppTransport(api, new_endpoints)
            )
            reply = Assistant(cluster.settings, client, user="bob", team="nlp").ask("our team's quota").reply
            client.close()
    finally:
        flag.touch()

    # Then vision holds all the recent use: 2^-(1 / 0.5) = a quarter of the 6-h credit; nlp the whole credit
    ours, theirs = vision["fair_share"], nlp["fair_share"]
    assert ours["decayed_gpu_h"] > 0 and ours["part_of_use"] == 1.0 and ours["equal_share"] == 0.5
    assert (ours["factor"], ours["credit_h"], ours["max_credit_h"]) == (0.25, 1.5, 6.0)
    assert (theirs["decayed_gpu_h"], theirs["part_of_use"], theirs["factor"], theirs["credit_h"]) == (
        0,
        0,
        1,
        6,
    )
    assert ours["half_life_days"] == 7
    assert (
        "Fair share: 0% of recent use against an equal share of 50%, so its waiting tasks get 6 of 6 h"
        in reply
    )
