"""Fixtures of the assistant tests: the real API app as an in-process transport, people, scripted models."""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import httpx
import pytest
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable

from api.main import create_app
from assistant.agent import Assistant
from assistant.client import AssistantClient
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.worker import Worker

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*starlette.testclient.*")
    from fastapi.testclient import TestClient

NOW = datetime.fromisoformat("2026-03-02T15:00:00+00:00")
NEW_ENDPOINTS = re.compile(r"^/api/v1/(?:tasks/\d+/explain|estimate|quota|reports/utilization)$")


class AppTransport(httpx.BaseTransport):
    """An httpx transport that hands each request to the FastAPI app in-process (TestClient speaks httpx2)."""

    def __init__(
        self,
        test_client: TestClient,
        fallback: Callable[[httpx.Request], httpx.Response] | None = None,
        *,
        old_server: bool = False,
    ) -> None:
        self.test_client = test_client
        self.fallback = fallback
        self.old_server = old_server
        self.requests: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        if self.old_server and NEW_ENDPOINTS.match(request.url.path):
            return httpx.Response(404, json={"detail": "Not Found"})
        answer = self.test_client.request(
            request.method, str(request.url), headers=dict(request.headers), content=request.read()
        )
        missing = answer.status_code == 404 and answer.json().get("detail") == "Not Found"
        if missing and self.fallback and NEW_ENDPOINTS.match(request.url.path):
            return self.fallback(request)  # the route itself is missing: not built yet
        headers = [
            (k, v)
            for k, v in answer.headers.items()
            if k.lower() not in ("content-encoding", "content-length")
        ]
        return httpx.Response(answer.status_code, headers=headers, content=answer.content)


def new_endpoints(request: httpx.Request) -> httpx.Response:
    """Canned answers for explain / estimate / quota / utilization (used only where the API lacks them)."""
    path = request.url.path
    if path.endswith("/explain"):
        task_id = int(path.split("/")[-2])
        body: dict[str, Any] = {
            "task_id": task_id,
            "status": "queued",
            "position": 2,
            "reason": "waiting for 2 GPUs with 40 GB free; next free in about 1 h",
            "estimated_start": "2026-03-02T23:00:00+00:00",
            "estimated_start_low": None,
            "estimated_start_high": None,
            "estimated_end": None,
            "priority": {
                "class": "normal",
                "class_part_s": 0.0,
                "age_part_s": 60.0,
                "fairshare_part_s": 0.0,
                "effective_s": 60.0,
            },
        }
    elif path.endswith("/estimate"):
        body = {
            "start": "2026-03-02T16:00:00+00:00",
            "low": "2026-03-02T15:30:00+00:00",
            "high": "2026-03-02T17:00:00+00:00",
            "wait_s": 3600.0,
            "reason": "2 tasks ahead of you",
            "position": 3,
        }
    elif path.endswith("/quota"):
        body = {
            "team": request.url.params.get("team") or "vision",
            "gpu_cap": 4,
            "gpus_in_use": 1,
            "day": {"used_gpu_h": 6.0, "budget_gpu_h": 24.0, "state": "ok"},
            "week": {"used_gpu_h": 40.0, "budget_gpu_h": 100.0, "state": "ok"},
        }
    else:
        body = {
            "days": int(request.url.params.get("days", 7)),
            "by": request.url.params.get("by", "team"),
            "rows": [
                {
                    "key": "vision",
                    "gpu_hours": 30.5,
                    "tasks": 12,
                    "succeeded": 10,
                    "failed": 2,
                    "mean_wait_s": 600.0,
                }
            ],
            "total_gpu_hours": 30.5,
            "capacity_gpu_hours": 672.0,
            "utilization": 0.045,
        }
    return httpx.Response(200, json=body)


class ScriptedChatModel(GenericFakeChatModel):
    """A scripted chat model that accepts tools (LangChain's fake models do not)."""

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Tools change nothing: the script decides."""
        return self


def tool_call(name: str, args: dict[str, Any], call_id: str = "call_1") -> AIMessage:
    """An AIMessage asking for one tool call."""
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


@pytest.fixture
def api(cluster: Cluster) -> Iterator[TestClient]:
    """The real API app over the test cluster."""
    with TestClient(create_app(cluster)) as test_client:
        yield test_client


@pytest.fixture
def make_client(api: TestClient) -> Iterator[Callable[[str], AssistantClient]]:
    """Factory: a person's AssistantClient (their token) over the in-process API (+ canned new endpoints)."""
    clients: list[AssistantClient] = []

    def make(token: str) -> AssistantClient:
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def make_assistant(
    cluster: Cluster, make_client: Callable[[str], AssistantClient], make_identity: Callable[..., Any]
) -> Callable[..., Assistant]:
    """Factory: an Assistant for a new person (`user`, `team`), offline model unless `model` is given."""

    def make(
        user: str = "alice",
        team: str = "vision",
        model: Any = None,
        now: datetime = NOW,
        dry_run: bool = False,
        admin: bool = False,
    ) -> Assistant:
        _, token = make_identity(user, team, admin=admin)
        client = make_client(token)
        return Assistant(
            cluster.settings, client, model=model, now=lambda: now, user=user, team=team, dry_run=dry_run
        )

    return make


def tool_result(messages: list[Any], name: str) -> dict[str, Any]:
    """The parsed JSON result of the last call of tool `name` in a message list."""
    for message in reversed(messages):
        if getattr(message, "name", None) == name and message.type == "tool":
            return json.loads(message.content)
    raise AssertionError(f"no {name} result")


@pytest.fixture
def four_gpu_node(cluster):
    """A node with 4 simulated 24 GB GPUs, registered as a worker registers it (no worker loop runs)."""
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    worker.publish_node()
    return worker
