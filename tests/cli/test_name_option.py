"""`--name` followed by `--` or another option took that as the task's name: refused before anything is
sent, with how to give a name."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from api.cli.app import app
from scheduler.settings import get_settings


@pytest.mark.parametrize(
    "args",
    [
        ["submit", "--name", "--", "python", "x.py"],
        ["submit", "--name", "--gpus", "2", "--", "python", "x.py"],
        ["change", "7", "--name", "-x"],
    ],
)
def test_a_name_that_starts_with_a_dash_is_refused_with_how_to_give_one(monkeypatch, tmp_path, args):
    monkeypatch.setenv("NIGHTSHIFT_API_URL", "http://127.0.0.1:9")  # nothing is sent: it would fail with 1
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path))
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, args)
    finally:
        get_settings.cache_clear()

    assert result.exit_code == 2, result.output
    assert "a name cannot start with '-'" in result.output
    assert "--name baseline -- python train.py" in result.output
