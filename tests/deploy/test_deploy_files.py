"""The deployment files validate: compose.yaml with docker-compose, the systemd units with systemd-analyze."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import unavailable

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        unavailable(f"{name} is not installed (make test installs it)")
    return found


def _compose_config(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    shutil.copy(ROOT / "compose.yaml", tmp_path / "compose.yaml")
    (tmp_path / ".env").write_text("")
    return subprocess.run(
        [_tool("docker-compose"), "-f", "compose.yaml", "config", "-q"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_compose_file_validates_with_its_secrets_set(tmp_path: Path):
    result = _compose_config(tmp_path, {"NIGHTSHIFT_DB_PASSWORD": "x", "NIGHTSHIFT_REDIS_PASSWORD": "y"})
    assert result.returncode == 0, result.stderr


def test_the_compose_file_refuses_to_start_without_its_secrets(tmp_path: Path):
    result = _compose_config(tmp_path, {})
    assert result.returncode != 0
    assert "not set" in result.stderr


def test_the_compose_file_reserves_gpus_and_checks_health():
    text = (ROOT / "compose.yaml").read_text()
    for expected in (
        "driver: nvidia",
        "capabilities: [gpu]",
        "service_healthy",
        "--appendonly",
        "noeviction",
    ):
        assert expected in text


@pytest.mark.parametrize("unit", sorted(p.name for p in (ROOT / "deploy" / "systemd").glob("*.service")))
def test_each_systemd_unit_verifies(unit: str, tmp_path: Path):
    analyze = _tool("systemd-analyze")
    env_file = tmp_path / "nightshift.env"
    env_file.write_text("")
    venv_bin = Path(sys.executable).parent
    text = (ROOT / "deploy" / "systemd" / unit).read_text()
    text = text.replace("/opt/nightshift/.venv/bin", str(venv_bin)).replace(
        "/etc/nightshift/nightshift.env", str(env_file)
    )
    (tmp_path / unit).write_text(text)
    result = subprocess.run(
        [analyze, "verify", str(tmp_path / unit)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "error" not in result.stderr.lower(), result.stderr
