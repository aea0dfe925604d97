"""Where the CLI looks for the API when `NIGHTSHIFT_API_URL` is not set: the port (and address) this
machine's `nightshift up` takes from the same settings, so `NIGHTSHIFT_PORT=8771 make up &` and the CLI in
that shell find each other."""

from __future__ import annotations

import pytest

from api.client import ClientError, NightshiftClient
from scheduler.settings import Settings


@pytest.fixture(autouse=True)
def _no_address_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NIGHTSHIFT_API_URL", "NIGHTSHIFT_PORT", "NIGHTSHIFT_HOST", "NIGHTSHIFT_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def test_the_default_is_the_default_port_on_this_machine() -> None:
    assert Settings().api_url == "http://127.0.0.1:8000"


def test_a_port_set_for_the_server_is_the_one_the_cli_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIGHTSHIFT_PORT", "8771")

    assert Settings().api_url == "http://127.0.0.1:8771"


@pytest.mark.parametrize(
    ("host", "url"),
    [("0.0.0.0", "http://127.0.0.1:8771"), ("::", "http://127.0.0.1:8771"), ("10.1.2.3", "http://10.1.2.3:8771"),
     ("::1", "http://[::1]:8771")],
)  # fmt: skip
def test_an_address_bound_for_all_interfaces_is_called_on_loopback(host: str, url: str) -> None:
    assert Settings(host=host, port=8771).api_url == url


def test_an_api_url_that_is_set_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIGHTSHIFT_PORT", "8771")
    monkeypatch.setenv("NIGHTSHIFT_API_URL", "http://gpu-head:8000")

    assert Settings().api_url == "http://gpu-head:8000"
    assert Settings(api_url="http://other:9000").api_url == "http://other:9000"


def test_an_api_that_does_not_answer_says_which_setting_names_it() -> None:
    client = NightshiftClient("http://127.0.0.1:9", None, timeout_s=5)
    try:
        with pytest.raises(ClientError) as refused:
            client.gpus()
    finally:
        client.close()

    assert "cannot reach the nightshift API at http://127.0.0.1:9" in refused.value.message
    assert "NIGHTSHIFT_API_URL" in refused.value.message
