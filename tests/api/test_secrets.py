"""A person's secrets (`/api/v1/secrets`): set, listed by name, removed; a spec names the ones its job gets,
and no answer of the API ever holds a value. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from api.main import create_app
from scheduler.service import Cluster
from scheduler.settings import Settings
from scheduler.store.identity import authenticate, create_token
from tests.api.conftest import TestClient, bearer
from tests.conftest import opened_cluster

VALUE = "hf_s3cr3t_value_1234"


@pytest.fixture
def cluster(make_settings: Callable[..., Settings], redis_url: str, database_url: str) -> Iterator[Cluster]:
    with opened_cluster(make_settings(database_url=database_url), redis_url) as opened:
        yield opened


def test_secrets_are_set_listed_by_name_and_removed_each_persons_own(cluster):
    alice = bearer(create_token(cluster.factory, user="alice", team="vision"))
    bob = bearer(create_token(cluster.factory, user="bob", team="vision"))
    with TestClient(create_app(cluster)) as client:
        created = client.put("/api/v1/secrets/HF_TOKEN", json={"value": VALUE}, headers=alice)
        replaced = client.put("/api/v1/secrets/HF_TOKEN", json={"value": VALUE + "2"}, headers=alice)
        listed = client.get("/api/v1/secrets", headers=alice)
        bobs = client.get("/api/v1/secrets", headers=bob)
        bob_removes = client.delete("/api/v1/secrets/HF_TOKEN", headers=bob)
        bad_name = client.put("/api/v1/secrets/NIGHTSHIFT_TOKEN", json={"value": "x"}, headers=alice)
        nul = client.put("/api/v1/secrets/KEY", json={"value": "a\x00b"}, headers=alice)
        empty = client.put("/api/v1/secrets/KEY", json={"value": ""}, headers=alice)
        removed = client.delete("/api/v1/secrets/HF_TOKEN", headers=alice)
        again = client.delete("/api/v1/secrets/HF_TOKEN", headers=alice)

    assert created.status_code == 201 and created.json()["name"] == "HF_TOKEN"
    assert replaced.status_code == 200
    assert [secret["name"] for secret in listed.json()] == ["HF_TOKEN"]
    for answer in (created, replaced, listed):
        assert VALUE not in answer.text  # the value goes in, never out
    assert bobs.json() == [] and bob_removes.status_code == 404  # a teammate's are not yours
    assert bad_name.status_code == 422 and "set by nightshift itself" in bad_name.json()["detail"]
    assert nul.status_code == 422 and empty.status_code == 422
    assert removed.status_code == 204
    assert again.status_code == 404 and "no secret 'HF_TOKEN'" in again.json()["detail"]


def test_a_task_names_its_secrets_and_one_not_set_is_refused_before_it_is_queued(cluster):
    alice = bearer(create_token(cluster.factory, user="alice", team="vision"))
    bob = bearer(create_token(cluster.factory, user="bob", team="vision"))
    with TestClient(create_app(cluster)) as client:
        client.put("/api/v1/secrets/HF_TOKEN", json={"value": VALUE}, headers=alice)
        missing = client.post(
            "/api/v1/tasks", json={"command": "true", "gpus": 0, "secrets": ["HF_TOKEN", "WANDB_API_KEY"]},
            headers=alice,
        )  # fmt: skip
        sweep = client.post(
            "/api/v1/sweeps",
            json={"command": "t --lr {lr}", "gpus": 0, "sweep": {"lr": [1, 2]}, "secrets": ["WANDB_API_KEY"]},
            headers=alice,
        )
        both = client.post(
            "/api/v1/tasks",
            json={"command": "true", "gpus": 0, "secrets": ["HF_TOKEN"], "env": {"HF_TOKEN": "x"}},
            headers=alice,
        )
        made = client.post(
            "/api/v1/tasks", json={"command": "true", "gpus": 0, "secrets": ["HF_TOKEN"]}, headers=alice
        )
        seen_by_bob = client.get(f"/api/v1/tasks/{made.json()['id']}", headers=bob)
        bobs_own = client.post(
            "/api/v1/tasks", json={"command": "true", "gpus": 0, "secrets": ["HF_TOKEN"]}, headers=bob
        )

    assert missing.status_code == 422
    assert missing.json()["detail"].startswith(
        "you have no secret WANDB_API_KEY: store it with `nightshift secret set WANDB_API_KEY` in a terminal"
    )
    assert sweep.status_code == 422 and "no secret WANDB_API_KEY" in sweep.json()["detail"]
    assert both.status_code == 422 and "HF_TOKEN is in both env and secrets" in both.json()["detail"]
    assert made.status_code == 201 and made.json()["spec"]["secrets"] == ["HF_TOKEN"]
    assert seen_by_bob.json()["spec"]["secrets"] == ["HF_TOKEN"] and VALUE not in seen_by_bob.text
    assert bobs_own.status_code == 422  # alice's secret is hers: bob's task cannot name it
    assert [task.id for task in cluster.tasks.with_status("queued")] == [
        made.json()["id"]
    ]  # nothing half-made


def test_the_api_seals_at_its_start_what_was_stored_in_the_clear(cluster, caplog):
    from sqlalchemy import insert, select

    from api.server import seal_stored_secrets
    from scheduler.store.tables import Secret

    user_id = authenticate(
        cluster.factory, create_token(cluster.factory, user="alice", team="vision")
    ).user_id
    with cluster.engine.begin() as connection:  # as a release before sealing stored it
        connection.execute(insert(Secret).values(user_id=user_id, name="HF_TOKEN", value=VALUE))
    with caplog.at_level("INFO", logger="nightshift"):
        seal_stored_secrets(cluster)
        seal_stored_secrets(cluster)  # a second start rewrites nothing

    with cluster.engine.connect() as connection:
        stored = connection.execute(select(Secret.value)).scalar_one()
    assert VALUE not in stored
    assert cluster.secrets.values_for(user_id, "alice", ["HF_TOKEN"]) == {"HF_TOKEN": VALUE}
    assert [r.getMessage() for r in caplog.records if "sealed" in r.getMessage()] == [
        "sealed 1 stored secret under the current key"
    ]
