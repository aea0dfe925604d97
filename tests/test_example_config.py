"""The example site configuration shipped in `deploy/` loads, and means what its comments say."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.service import policy_config_of
from scheduler.settings import Settings

EXAMPLE = Path(__file__).resolve().parents[1] / "deploy" / "nightshift.toml"


def test_the_example_config_loads_with_its_caps_and_team_and_personal_budgets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no nightshift.toml of the working directory comes first
    monkeypatch.setenv("NIGHTSHIFT_CONFIG", str(EXAMPLE))

    config = policy_config_of(Settings())

    assert config.team_cap("vision") == 4 and config.user_cap("alice") == 2
    assert tuple(config.team_budgets("vision")) == (64.0, 300.0)
    assert tuple(config.user_budgets("alice")) == (None, 150.0)
    assert tuple(config.user_budgets("bob")) == (None, None)  # the default is left commented out
