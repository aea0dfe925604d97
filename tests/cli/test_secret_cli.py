"""`nightshift secret set|ls|rm` and `submit --secret`: a value goes in by a pipe, a prompt or this shell's
variable, and never comes out."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from api.cli.app import app
from scheduler.settings import get_settings
from tests.cli.conftest import cli_as

VALUE = "wandb_s3cr3t_value"


def test_a_secret_is_stored_from_a_pipe_or_this_shell_named_by_a_task_and_removed(
    cluster, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        piped = CliRunner().invoke(app, ["secret", "set", "WANDB_API_KEY"], input=VALUE + "\n")
        listed = nightshift("secret", "ls")
        as_json = nightshift("secret", "ls", "--json")
        submitted = nightshift(
            "submit", "--json", "--gpus", "0", "--secret", "WANDB_API_KEY", "--", "python", "t.py"
        )
        refused = nightshift("submit", "--gpus", "0", "--secret", "HF_TOKEN", "--", "python", "t.py")
        monkeypatch.setenv("HF_TOKEN", "hf_from_this_shell")
        from_env = nightshift("secret", "set", "HF_TOKEN", "--from-env")
        user_id = cluster.tasks.get_any(json.loads(submitted.stdout)["id"]).user_id
        stored = cluster.secrets.values_for(user_id, "alice", ["HF_TOKEN", "WANDB_API_KEY"])
        monkeypatch.delenv("HF_TOKEN")
        unset = nightshift("secret", "set", "HF_TOKEN", "--from-env")
        removed = nightshift("secret", "rm", "WANDB_API_KEY")
        gone = nightshift("secret", "rm", "WANDB_API_KEY")

    assert piped.exit_code == 0, piped.output
    assert "secret WANDB_API_KEY stored" in piped.stdout
    assert "WANDB_API_KEY" in listed.stdout and VALUE not in listed.stdout + as_json.stdout
    assert [secret["name"] for secret in json.loads(as_json.stdout)] == ["WANDB_API_KEY"]
    assert submitted.exit_code == 0, submitted.output
    assert (
        json.loads(submitted.stdout)["spec"]["secrets"] == ["WANDB_API_KEY"] and VALUE not in submitted.stdout
    )
    assert refused.exit_code == 1 and "you have no secret HF_TOKEN" in refused.stderr
    assert from_env.exit_code == 0
    assert stored == {"HF_TOKEN": "hf_from_this_shell", "WANDB_API_KEY": VALUE}
    assert unset.exit_code == 2 and "$HF_TOKEN is not set in this shell" in unset.output
    assert removed.exit_code == 0 and "secret WANDB_API_KEY removed" in removed.stdout
    assert gone.exit_code == 1 and "no secret 'WANDB_API_KEY'" in gone.stderr


def test_secret_key_prints_the_key_this_box_seals_with_for_the_gpu_boxes(
    cluster, make_identity, monkeypatch, tmp_path
):
    def secret_key(home: Path) -> Result:
        monkeypatch.setenv("NIGHTSHIFT_HOME", str(home))
        get_settings.cache_clear()
        try:
            return CliRunner().invoke(app, ["secret", "key"])
        finally:
            get_settings.cache_clear()

    monkeypatch.delenv("NIGHTSHIFT_SECRETS_KEY", raising=False)
    none_yet = secret_key(tmp_path / "fresh")
    make_identity("alice", "vision")
    cluster.secrets.put("alice", "HF_TOKEN", VALUE)  # the first secret makes the key
    made = secret_key(cluster.settings.home)
    monkeypatch.setenv("NIGHTSHIFT_SECRETS_KEY", "k1,k0")
    given = secret_key(tmp_path / "fresh")

    assert none_yet.exit_code == 1
    assert "no secrets key on this box" in none_yet.output
    assert "a key is made here when the first secret is set" in none_yet.output
    assert made.exit_code == 0, made.output
    assert made.stdout.strip() == cluster.settings.secrets_key_file.read_text().strip()
    assert given.stdout.strip() == "k1,k0"
