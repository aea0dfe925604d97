"""The CLI reads and shows times in the cluster's zone, which the API reports at /healthz: a shell without
NIGHTSHIFT_TIMEZONE on a machine in another zone still means the cluster's 23:00, as the chat does."""

from __future__ import annotations

import json
import os
import socket
import threading
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from zoneinfo import ZoneInfo

import httpx
import pytest

from api.cli.zone import in_cluster_zone
from scheduler.settings import get_settings
from scheduler.store.identity import create_token
from tests.cli.conftest import cli_as

SHANGHAI = ZoneInfo("Asia/Shanghai")


@pytest.fixture
def shanghai_cluster(make_cluster):
    return make_cluster(timezone="Asia/Shanghai")


@pytest.fixture
def token(shanghai_cluster):
    return create_token(shanghai_cluster.factory, user="alice", team="vision")


@pytest.fixture(autouse=True)
def shell_in_new_york(monkeypatch):
    """A shell that sets no NIGHTSHIFT_TIMEZONE on a machine whose own zone is New York's."""
    monkeypatch.delenv("NIGHTSHIFT_TIMEZONE", raising=False)
    monkeypatch.setenv("TZ", "America/New_York")


def _hour_minute_in_shanghai(iso: str) -> tuple[int, int]:
    moment = datetime.fromisoformat(iso).astimezone(SHANGHAI)
    return moment.hour, moment.minute


def test_the_api_reports_its_zone_at_healthz(shanghai_cluster, token, monkeypatch, tmp_path):
    with cli_as(shanghai_cluster, token, monkeypatch, tmp_path / "client-home"):
        health = httpx.get(f"{os.environ['NIGHTSHIFT_API_URL']}/healthz").json()

    assert health["timezone"] == "Asia/Shanghai"


def test_submit_after_change_and_ls_use_the_zone_the_api_reports(
    shanghai_cluster, token, monkeypatch, tmp_path
):
    with cli_as(shanghai_cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        submitted = nightshift("submit", "--after", "23:00", "--json", "--", "true")
        task = json.loads(submitted.output)
        # 08:00 the day after its start, a naive time: "tomorrow 8am" comes before a 23:00 start that is
        # itself tomorrow's once 23:00 has passed in Shanghai (15:00-16:00 UTC)
        start_day = datetime.fromisoformat(task["spec"]["not_before"]).astimezone(SHANGHAI).date()
        deadline = f"{start_day + timedelta(days=1)} 08:00"
        changed = nightshift("change", str(task["id"]), "--deadline", deadline, "--json")
        listed = nightshift("ls")

    assert submitted.exit_code == 0 and changed.exit_code == 0, submitted.output + changed.output
    assert _hour_minute_in_shanghai(task["spec"]["not_before"]) == (23, 0)
    assert _hour_minute_in_shanghai(json.loads(changed.output)["spec"]["deadline"]) == (8, 0)
    shown = datetime.fromisoformat(task["submitted_at"]).astimezone(SHANGHAI).strftime("%m-%d %H:%M:%S")
    assert listed.exit_code == 0 and shown in listed.output, listed.output


def test_ask_reads_tonight_in_the_zone_the_api_reports(shanghai_cluster, token, monkeypatch, tmp_path):
    with cli_as(shanghai_cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        asked = nightshift(
            "ask", "--dry-run", "--json", "--now", "2026-03-02T12:00:00+00:00", "run `python x.py` after 11pm"
        )

    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.output)["spec"]["not_before"] == "2026-03-02T23:00:00+08:00"


def test_the_shells_own_zone_wins_over_the_clusters(shanghai_cluster, token, monkeypatch, tmp_path):
    with cli_as(shanghai_cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        monkeypatch.setenv("NIGHTSHIFT_TIMEZONE", "UTC")
        get_settings.cache_clear()
        submitted = nightshift("submit", "--after", "23:00", "--json", "--", "true")

    not_before = datetime.fromisoformat(json.loads(submitted.output)["spec"]["not_before"])
    assert (not_before.astimezone(ZoneInfo("UTC")).hour, not_before.minute) == (23, 0)


def test_the_chat_served_apart_takes_the_apis_zone_unless_it_has_its_own(
    shanghai_cluster, make_settings, token, monkeypatch, tmp_path
):
    with cli_as(shanghai_cluster, token, monkeypatch, tmp_path / "client-home"):
        url = os.environ["NIGHTSHIFT_API_URL"]
        plain = in_cluster_zone(make_settings(api_url=url, timezone=""))
        own = in_cluster_zone(make_settings(api_url=url, timezone="Europe/Berlin"))
    unreachable = in_cluster_zone(make_settings(api_url="http://127.0.0.1:9", timezone=""))

    assert (plain.timezone, own.timezone, unreachable.timezone) == ("Asia/Shanghai", "Europe/Berlin", "")


def test_an_api_that_did_not_answer_is_asked_for_its_zone_again(make_settings):
    # Given a port where no API listens yet
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = make_settings(api_url=f"http://127.0.0.1:{port}", timezone="")
    before = in_cluster_zone(settings)

    # When an API answers there (a plain HTTP server saying its zone, as /healthz does)
    class Healthz(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"status": "ok", "timezone": "Asia/Shanghai"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Healthz)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        after = in_cluster_zone(settings)
    finally:
        server.shutdown()
        server.server_close()

    # Then the failed lookup was not remembered: the zone comes from the API that now answers
    assert (before.timezone, after.timezone) == ("", "Asia/Shanghai")


def test_the_chat_served_apart_takes_the_apis_offpeak_windows_unless_it_has_its_own(
    make_cluster, make_settings, monkeypatch, tmp_path
):
    # Given a cluster whose cheap hours are 01:00-05:00, and a chat served apart that sets no windows
    night_cluster = make_cluster(timezone="Asia/Shanghai", offpeak="01:00-05:00")
    token = create_token(night_cluster.factory, user="alice", team="vision")
    with cli_as(night_cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        url = os.environ["NIGHTSHIFT_API_URL"]
        plain = in_cluster_zone(make_settings(api_url=url, timezone=""))
        own = in_cluster_zone(make_settings(api_url=url, timezone="", offpeak="22:00-06:00"))
        asked = nightshift("ask", "--now", "2026-03-02T12:00:00+08:00", "when is off-peak?")

    # Then "tonight" means the cluster's windows there, as at its own /ui; a window set apart wins
    assert (plain.offpeak, plain.timezone) == ("01:00-05:00", "Asia/Shanghai")
    assert own.offpeak == "22:00-06:00"
    assert asked.exit_code == 0, asked.output
    assert "Off-peak (cheap power) is 01:00-05:00, cluster time. It is 12:00 now" in asked.output
