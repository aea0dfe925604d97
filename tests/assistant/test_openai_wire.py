"""The OpenAI wire format: a small local OpenAI-compatible server answers with a tool call, then a streamed reply."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from assistant.agent import Assistant, Turn, make_model
from assistant.tools import TOOL_NAMES
from tests.assistant.conftest import NOW

REPLY_PARTS = ["You have ", "one queued ", "task."]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


class FakeOpenAI(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: a tool call first; once a tool result is in the messages, a streamed text."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        answered = body["messages"][-1]["role"] == "tool"
        if not body.get("stream"):
            self._json(answered)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        if answered:
            self.wfile.write(_chunk({"role": "assistant", "content": ""}))
            for part in REPLY_PARTS:
                self.wfile.write(_chunk({"content": part}))
            self.wfile.write(_chunk({}, "stop"))
        else:
            call = {
                "index": 0,
                "id": "call_abc",
                "type": "function",
                "function": {"name": "list_tasks", "arguments": ""},
            }
            self.wfile.write(_chunk({"role": "assistant", "content": None, "tool_calls": [call]}))
            args = {"index": 0, "function": {"arguments": json.dumps({"status": "queued"})}}
            self.wfile.write(_chunk({"tool_calls": [args]}))
            self.wfile.write(_chunk({}, "tool_calls"))
        self.wfile.write(b"data: [DONE]\n\n")

    def _json(self, answered: bool) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(REPLY_PARTS)}
        if not answered:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "list_tasks", "arguments": json.dumps({"status": "queued"})},
                    }
                ],
            }
        payload = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "test-model",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A local OpenAI-compatible server on 127.0.0.1 (never the internet); yields its /v1 base URL."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    FakeOpenAI.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_the_openai_compatible_model_calls_tools_and_streams_its_reply(
    openai_server, cluster, make_client, make_identity
):
    # Given settings naming a local OpenAI-compatible endpoint
    settings = cluster.settings.model_copy(
        update={"llm_base_url": openai_server, "llm_model": "test-model", "llm_api_key": "sk-local"}
    )
    model, label = make_model(settings)
    _, token = make_identity("alice", "vision")
    client = make_client(token)
    client.submit({"command": "echo hi", "gpus": 0})
    assistant = Assistant(settings, client, model=model, model_label=label, now=lambda: NOW)

    # When a turn is streamed
    pieces = list(assistant.stream("what is queued?"))

    # Then the text arrived in pieces and the turn records the tool call made through the real API
    turn = pieces[-1]
    assert isinstance(turn, Turn)
    assert [p for p in pieces[:-1] if isinstance(p, str)] == REPLY_PARTS
    assert turn.reply == "".join(REPLY_PARTS)
    assert turn.tool_calls == [{"name": "list_tasks", "args": {"status": "queued"}}]
    assert "test-model" in assistant.model_label and "OpenAI-compatible" in assistant.model_label

    first, second = FakeOpenAI.requests
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-local"
    assert first["body"]["stream"] is True and first["body"]["model"] == "test-model"
    assert sorted(t["function"]["name"] for t in first["body"]["tools"]) == sorted(TOOL_NAMES)
    assert (
        first["body"]["messages"][0]["role"] == "system"
        and "Current time: 2026-03-02T15:00:00" in first["body"]["messages"][0]["content"]
    )
    tool_message = second["body"]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_abc"
    assert "<data>echo hi</data>" in tool_message["content"]


def test_identity_is_never_a_tool_argument_the_model_could_set():
    from assistant.cards import ActionStore
    from assistant.tools import ToolContext, make_tools

    tools = make_tools(ToolContext(client=None, actions=ActionStore(), now=lambda: NOW))
    names = {name for tool in tools for name in tool.args}
    assert [tool.name for tool in tools] == list(TOOL_NAMES)
    assert not names & {"user", "team_id", "token", "identity", "user_id", "is_admin"}


def test_without_llm_settings_the_offline_model_answers(cluster):
    model, label = make_model(cluster.settings)
    assert type(model).__name__ == "OfflineChatModel" and "offline" in label
