"""`nightshift token create`: prints a token that the API accepts, and warns when the person's jobs would run
as root (a root worker, no `run_as` account for them)."""

from __future__ import annotations

import json
import os

from typer.testing import CliRunner

from api.cli.app import app
from scheduler.settings import get_settings


def _token(monkeypatch, tmp_path, *args: str):
    """`nightshift token ARGS...` on the server of this test's database."""
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NIGHTSHIFT_DATABASE_URL", f"sqlite:///{tmp_path / 'ns.db'}")
    get_settings.cache_clear()
    try:
        return CliRunner().invoke(app, ["token", *args])
    finally:
        get_settings.cache_clear()


def _create(monkeypatch, tmp_path, user: str, run_as: dict[str, str] | None = None):
    if run_as is not None:
        monkeypatch.setenv("NIGHTSHIFT_RUN_AS", json.dumps(run_as))
    return _token(monkeypatch, tmp_path, "create", "--user", user, "--team", "vision")


def test_a_token_for_someone_without_a_run_as_account_warns_on_a_root_box(monkeypatch, tmp_path):
    unmapped = _create(monkeypatch, tmp_path, "alice")
    mapped = _create(monkeypatch, tmp_path, "bob", run_as={"bob": "bob"})

    assert unmapped.exit_code == 0 and unmapped.stdout.strip().startswith("ns_"), unmapped.output
    warned = "alice has no `run_as` account" in " ".join(unmapped.stderr.split())
    assert warned == (os.geteuid() == 0)  # only a root worker runs unmapped jobs as root
    assert "run_as" not in mapped.stderr


def _revoke(monkeypatch, tmp_path, *args: str):
    return _token(monkeypatch, tmp_path, "revoke", *args)


def test_token_revoke_by_user_name_revokes_all_their_tokens(monkeypatch, tmp_path):
    created = [_create(monkeypatch, tmp_path, "alice").stdout.strip() for _ in range(2)]
    assert all(token.startswith("ns_") for token in created)

    revoked = _revoke(monkeypatch, tmp_path, "--user", "alice")
    again = _revoke(monkeypatch, tmp_path, "--user", "alice")
    neither = _revoke(monkeypatch, tmp_path)

    assert revoked.exit_code == 0 and "revoked 2 token(s)" in revoked.stdout, revoked.output
    assert again.exit_code == 1 and "'alice' has no active token" in again.output
    assert neither.exit_code == 2 and "--user NAME" in neither.output


def _ls(monkeypatch, tmp_path, *args: str):
    return _token(monkeypatch, tmp_path, "ls", *args)


def test_token_ls_says_who_has_access_with_the_prefix_revoke_takes(monkeypatch, tmp_path):
    empty = _ls(monkeypatch, tmp_path)
    alice = _create(monkeypatch, tmp_path, "alice").stdout.strip()
    bob = _create(monkeypatch, tmp_path, "bob").stdout.strip()
    _revoke(monkeypatch, tmp_path, bob[:10])

    table = _ls(monkeypatch, tmp_path)
    every = json.loads(_ls(monkeypatch, tmp_path, "--all", "--json").stdout)

    assert empty.exit_code == 0 and "nightshift token create" in " ".join(empty.stdout.split())
    assert table.exit_code == 0, table.output
    assert alice[:10] in table.stdout and "alice" in table.stdout and "vision" in table.stdout
    assert bob[:10] not in table.stdout and alice not in table.stdout  # revoked left out; no whole token
    assert [(t["user"], t["prefix"], t["revoked_at"] is not None) for t in every] == [
        ("alice", alice[:10], False),
        ("bob", bob[:10], True),
    ]
