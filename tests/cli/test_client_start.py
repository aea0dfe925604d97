"""The `nightshift` client commands (ls, submit, change, queue, explain, logs, gpus) talk HTTP only: they
must not load the service's parts (SQLAlchemy, Redis, alembic, FastAPI, the chat stack), which more than
doubled the start of every command (scheduler.resubmit pulled in the task store for `default_name`)."""

from __future__ import annotations

import json
import subprocess
import sys

SERVICE_PARTS = (
    "sqlalchemy", "redis", "alembic", "psycopg", "fastapi", "uvicorn", "apscheduler", "pynvml",
    "langchain", "gradio",
)  # fmt: skip
PROBE = """
import json, sys
from typer.testing import CliRunner
from api.cli.app import app
env = {"NIGHTSHIFT_API_URL": "http://127.0.0.1:9", "NIGHTSHIFT_TOKEN": "ns_x", "NIGHTSHIFT_HOME": sys.argv[1]}
codes = [CliRunner().invoke(app, args, env=env).exit_code for args in (
    ["--help"], ["ls"], ["submit", "--gpus", "1", "--", "true"], ["submit", "--like", "3", "--clear", "time-limit"],
    ["change", "3", "--clear", "time-limit"], ["queue"], ["explain", "3"], ["logs", "3"], ["gpus"],
)]
print(json.dumps({"codes": codes, "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def test_client_commands_load_none_of_the_services_parts(tmp_path) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, timeout=120, check=True
    )
    answer = json.loads(probe.stdout.strip().splitlines()[-1])

    assert answer["codes"] == [0] + [1] * 8  # each one ran, and said the API at port 9 does not answer
    assert [part for part in SERVICE_PARTS if part in answer["loaded"]] == []
