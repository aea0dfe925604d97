"""Secrets are sealed at rest: the `secrets` table holds Fernet tokens, never the values; the key lives apart
from the database (the data folder's `secrets.key`, owner-only, or NIGHTSHIFT_SECRETS_KEY), can be rotated,
and a box without it says what to set. On SQLite and PostgreSQL."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import insert, select, text

from scheduler.store.secret_sealing import SecretSealer, SecretsKeyError, is_sealed
from scheduler.store.secrets import SecretStore
from scheduler.store.tables import Secret
from tests.store.conftest import Store

VALUE = "hf_s3cr3t_value_1234"


def _stored(store: Store) -> dict[str, str]:
    with store.factory() as session:
        return {name: value for name, value in session.execute(select(Secret.name, Secret.value))}


def _secrets(store: Store, key_file: Path, keys: str | None = None) -> SecretStore:
    return SecretStore(store.factory, SecretSealer(keys, key_file))


def test_the_table_holds_a_token_and_a_job_gets_the_value(store: Store, tmp_path: Path):
    alice = store.identity("alice")
    key_file = tmp_path / "home" / "secrets.key"
    secrets = _secrets(store, key_file)
    secrets.put("alice", "HF_TOKEN", VALUE)
    secrets.put("alice", "WANDB_API_KEY", "wandb-1")

    stored = _stored(store)
    assert all(is_sealed(value) for value in stored.values())
    assert VALUE not in str(stored) and "wandb-1" not in str(stored)
    with store.engine.connect() as connection:  # not in any column, as a dump would read it
        dump = str(connection.execute(text("SELECT * FROM secrets")).all())
    assert VALUE not in dump
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

    # another process of the same box (a worker) opens them with the same key file
    worker_side = _secrets(store, key_file)
    assert worker_side.values_for(alice.user_id, "alice", ["WANDB_API_KEY", "HF_TOKEN"]) == {
        "WANDB_API_KEY": "wandb-1",
        "HF_TOKEN": VALUE,
    }
    assert worker_side.reseal() == (0, 0)  # already under the current key: nothing rewritten
    assert _stored(store) == stored


def test_a_box_without_the_key_says_what_to_set_and_makes_none(store: Store, tmp_path: Path):
    alice = store.identity("alice")
    _secrets(store, tmp_path / "server" / "secrets.key").put("alice", "HF_TOKEN", VALUE)

    elsewhere = tmp_path / "gpu-box" / "secrets.key"
    with pytest.raises(SecretsKeyError, match="NIGHTSHIFT_SECRETS_KEY") as no_key:
        _secrets(store, elsewhere).values_for(alice.user_id, "alice", ["HF_TOKEN"])
    assert "is missing" in str(no_key.value)
    assert not elsewhere.exists()  # opening never makes a key: one made here could open nothing

    wrong = Fernet.generate_key().decode()
    with pytest.raises(SecretsKeyError, match="sealed with a key this box lacks"):
        _secrets(store, elsewhere, keys=wrong).values_for(alice.user_id, "alice", ["HF_TOKEN"])
    assert _secrets(store, elsewhere, keys=wrong).reseal() == (0, 1)  # left as it is, counted

    given = (tmp_path / "server" / "secrets.key").read_text().strip()
    opened = _secrets(store, elsewhere, keys=given).values_for(alice.user_id, "alice", ["HF_TOKEN"])
    assert opened == {"HF_TOKEN": VALUE}


def test_a_key_is_rotated_by_naming_the_new_one_first(store: Store, tmp_path: Path):
    alice = store.identity("alice")
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    _secrets(store, tmp_path / "unused", keys=old).put("alice", "HF_TOKEN", VALUE)
    before = _stored(store)["HF_TOKEN"]

    rotating = _secrets(store, tmp_path / "unused", keys=f"{new}, {old}")
    assert rotating.values_for(alice.user_id, "alice", ["HF_TOKEN"]) == {"HF_TOKEN": VALUE}
    assert rotating.reseal() == (1, 0)
    assert _stored(store)["HF_TOKEN"] != before

    only_new = _secrets(store, tmp_path / "unused", keys=new)
    assert only_new.values_for(alice.user_id, "alice", ["HF_TOKEN"]) == {"HF_TOKEN": VALUE}
    with pytest.raises(SecretsKeyError):
        _secrets(store, tmp_path / "unused", keys=old).values_for(alice.user_id, "alice", ["HF_TOKEN"])


def test_values_stored_in_the_clear_before_sealing_are_read_then_sealed(store: Store, tmp_path: Path):
    alice = store.identity("alice")
    with store.engine.begin() as connection:
        connection.execute(insert(Secret).values(user_id=alice.user_id, name="HF_TOKEN", value=VALUE))
    secrets = _secrets(store, tmp_path / "home" / "secrets.key")
    assert secrets.values_for(alice.user_id, "alice", ["HF_TOKEN"]) == {"HF_TOKEN": VALUE}

    assert secrets.reseal() == (1, 0)
    assert is_sealed(_stored(store)["HF_TOKEN"])
    assert secrets.values_for(alice.user_id, "alice", ["HF_TOKEN"]) == {"HF_TOKEN": VALUE}


def test_a_key_that_is_no_fernet_key_is_refused_saying_what_one_is(store: Store, tmp_path: Path):
    store.identity("alice")
    with pytest.raises(SecretsKeyError, match="does not hold a Fernet key") as refused:
        _secrets(store, tmp_path / "unused", keys="hunter2").put("alice", "HF_TOKEN", VALUE)
    assert "NIGHTSHIFT_SECRETS_KEY" in str(refused.value)
    assert _stored(store) == {}  # nothing half-written


def test_processes_making_the_key_at_once_all_keep_the_same_one(tmp_path: Path):
    key_file = tmp_path / "home" / "secrets.key"
    script = (
        "import sys; from pathlib import Path; from scheduler.store.secret_sealing import SecretSealer; "
        "s = SecretSealer(None, Path(sys.argv[1])); token = s.seal('v'); print(s.key_text())"
    )
    runs = [
        subprocess.Popen([sys.executable, "-c", script, str(key_file)], stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    keys = {run.communicate(timeout=60)[0].strip() for run in runs}
    assert all(run.returncode == 0 for run in runs)
    assert keys == {key_file.read_text().strip()}
    assert [path.name for path in key_file.parent.iterdir()] == ["secrets.key"]  # no staging file left
