"""The chat UI in a real headless Chromium, against the real app served by uvicorn (Redis, SQLite, a worker
with simulated GPUs and the scheduler running in threads).

Waits use Playwright's `expect` with generous timeouts (the first request builds the Gradio app, which
takes seconds on a small CI machine); nothing asserts how long anything took.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from api.main import create_app
from api.server import ensure_local_admin_token
from assistant.ui.standalone import assistant_app
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.settings import Settings
from scheduler.store.identity import create_token
from scheduler.worker import Worker
from tests.conftest import unavailable, wait_until

CHROMIUM = Path(os.environ.get("NIGHTSHIFT_TEST_CHROMIUM", "/usr/bin/chromium"))
UI_TIMEOUT_MS = 120_000  # the first page load imports and builds Gradio
STEP_TIMEOUT_MS = 60_000
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ADMIN_CHARTS = (
    "#chart-gpu-hours", "#chart-gpu-share", "#chart-waits", "#chart-energy", "#chart-cost", "#chart-offpeak",
)  # fmt: skip
pytestmark = pytest.mark.timeout(300)  # a busy 2-core machine: Gradio's first build, Chromium, jobs


def offpeak_window_ahead(now: datetime) -> tuple[int, int, str]:
    """An off-peak window starting 2 hours from now (so "tonight" cannot start during the test)."""
    start, end = (now.hour + 2) % 24, (now.hour + 4) % 24
    return start, end, f"{start:02d}:00-{end:02d}:00"


def in_window(hour: int, start: int, end: int) -> bool:
    """Is `hour` inside the daily window [start, end) (which may cross midnight)?"""
    return start <= hour < end if start < end else hour >= start or hour < end


@dataclass
class LiveServer:
    """The app on a real port, its cluster, and the off-peak window it was configured with."""

    url: str
    cluster: Cluster
    window: tuple[int, int]

    def token(self, user: str, team: str, admin: bool = False) -> str:
        """A new API token for `user` of `team`."""
        return create_token(self.cluster.factory, user=user, team=team, is_admin=admin)

    def api(self, token: str) -> httpx.Client:
        """An HTTP client of the API with `token` (close it, or use it in a `with`)."""
        return httpx.Client(
            base_url=f"{self.url}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium (the Debian build), driven by Playwright; skipped without it unless in CI."""
    if not CHROMIUM.exists():
        unavailable(f"chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser page (own cookies and storage) per test."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(STEP_TIMEOUT_MS)
    # an assertion's own wait too (Playwright's default is 5 s, which a loaded CI machine can exceed)
    expect.set_options(timeout=STEP_TIMEOUT_MS)
    yield context.new_page()
    context.close()


@contextmanager
def served(app: Any) -> Iterator[str]:
    """`app` on uvicorn on a free port of 127.0.0.1 in a thread; yields its URL, stops it on exit."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="none", lifespan="on")
    server = uvicorn.Server(config)
    serving = threading.Thread(target=server.run, daemon=True)
    serving.start()
    wait_until(lambda: server.started or not serving.is_alive(), timeout_s=60)
    assert server.started, "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        serving.join(timeout=30)


@pytest.fixture
def server_settings() -> dict[str, Any]:
    """Extra settings of the live server (a test parametrizes this name to change them)."""
    return {}


@pytest.fixture
def live_server(
    make_settings: Callable[..., Settings], redis_url: str, tmp_path: Path, server_settings: dict[str, Any]
) -> Iterator[LiveServer]:
    """`create_app` on uvicorn (a free port) with the scheduler and a 4-GPU simulated worker in threads."""
    start, end, window = offpeak_window_ahead(datetime.now(UTC))
    settings = make_settings(
        database_url=f"sqlite:///{tmp_path / 'ui.db'}", offpeak=window, **server_settings
    )
    settings.home.mkdir(parents=True, exist_ok=True)
    cluster = Cluster.open(settings, redis_url)
    cluster.rebuild_redis()
    gpus = SimulatedGpus(settings.simulate_gpus or "4x24", node="node-a")
    worker = Worker(cluster, "node-a", gpus, base_env=dict(os.environ))
    worker.publish_node()
    stop = threading.Event()
    loops = [
        threading.Thread(target=target, args=(stop,), daemon=True)
        for target in (Dispatcher(cluster).run, worker.run)
    ]
    for loop in loops:
        loop.start()
    with served(create_app(cluster)) as url:
        yield LiveServer(url, cluster, (start, end))
    stop.set()
    for loop in loops:
        loop.join(timeout=30)
    gpus.close()
    cluster.close()


def open_ui(page: Any, server: LiveServer) -> None:
    """Load the UI and wait until Gradio has rendered it."""
    from playwright.sync_api import expect

    page.goto(f"{server.url}/ui/", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#who")).to_be_visible(timeout=UI_TIMEOUT_MS)


def sign_in(page: Any, server: LiveServer, token: str, user: str) -> None:
    """Open the UI and sign in by typing a token."""
    from playwright.sync_api import expect

    open_ui(page, server)
    page.locator("#token-input input").fill(token)
    page.locator("#sign-in-button").click()
    expect(page.locator("#who")).to_contain_text(f"Signed in as {user}")


def say(page: Any, text: str) -> None:
    """Type a chat message and send it."""
    page.locator("#chat-input textarea").fill(text)
    page.locator("#send-button").click()


def test_a_request_typed_in_chat_is_queued_offpeak_only_after_the_person_confirms_the_card(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    token = live_server.token("alice", "vision")
    sign_in(page, live_server, token, "alice")
    expect(page.locator("#model-label")).to_contain_text("offline model")
    expect(page.get_by_role("tab", name="Admin")).to_have_count(0)  # alice is no admin

    say(page, "run `python train.py` tonight on 2 GPUs")
    card = page.locator("#confirm-card")
    expect(card).to_be_visible()
    expect(card).to_contain_text("python train.py")
    expect(card).to_contain_text("2 GPUs")
    expect(card).to_contain_text("off-peak")
    with live_server.api(token) as api:
        assert api.get("/tasks").json()["tasks"] == []  # the card alone submits nothing

        page.locator("#confirm-button").click()
        expect(page.locator("#chat")).to_contain_text("Submitted task #")
        expect(card).to_be_hidden()

        tasks = api.get("/tasks").json()["tasks"]
        assert [(t["command"], t["gpus"], t["status"], t["user"]) for t in tasks] == [
            ("python train.py", 2, "queued", "alice")
        ]
        assert tasks[0]["spec"]["offpeak"] is True
        explain = api.get(f"/tasks/{tasks[0]['id']}/explain").json()
    start = datetime.fromisoformat(explain["estimated_start"]).astimezone(UTC)
    assert in_window(start.hour, *live_server.window), (start, live_server.window)


def _a_task_that_waits(live_server: LiveServer, token: str) -> dict[str, Any]:
    """A queued task of the token's person that will not start during the test."""
    with live_server.api(token) as api:
        task: dict[str, Any] = api.post(
            "/tasks", json={"command": "python train.py", "not_before": "2030-01-01T00:00:00Z"}
        ).json()
    return task


def test_a_queued_task_is_held_released_and_given_a_priority_from_the_tasks_tab(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    token = live_server.token("erin", "vision")
    task = _a_task_that_waits(live_server, token)
    sign_in(page, live_server, token, "erin")
    page.get_by_role("tab", name="My tasks").click()
    # the tab's own read of the table is in before the clicks below (as a person sees the table first), so
    # on a loaded machine it cannot answer after them and say "1 task(s)." over what a click said
    expect(page.locator("#tasks-note")).to_contain_text("1 task(s).", timeout=STEP_TIMEOUT_MS)
    page.locator("#log-task-id input").fill(str(task["id"]))

    page.locator("#hold-button").click()
    expect(page.locator("#tasks-note")).to_contain_text(f"Task {task['id']} is held", timeout=STEP_TIMEOUT_MS)
    expect(page.locator("#tasks-table")).to_contain_text("held by erin")
    with live_server.api(token) as api:
        assert api.get(f"/tasks/{task['id']}").json()["held_by"] == "erin"

    page.locator("#release-button").click()
    expect(page.locator("#tasks-note")).to_contain_text(f"Task {task['id']} is released")
    with live_server.api(token) as api:
        assert api.get(f"/tasks/{task['id']}").json()["held_by"] is None
    page.locator("#release-button").click()  # twice: says why not
    expect(page.locator("#tasks-note")).to_contain_text("Not done: task")

    page.locator("#priority-button").click()  # "high", the choice it offers first
    expect(page.locator("#tasks-note")).to_contain_text(f"Task {task['id']} now has priority high")
    with live_server.api(token) as api:
        assert api.get(f"/tasks/{task['id']}").json()["priority"] == "high"
    page.locator("#tasks-refresh").click()  # asked for: the count again
    expect(page.locator("#tasks-note")).to_contain_text("1 task(s).")


def test_a_task_is_held_and_released_by_asking_in_the_chat(live_server: LiveServer, page: Any) -> None:
    from playwright.sync_api import expect

    token = live_server.token("fay", "vision")
    task = _a_task_that_waits(live_server, token)
    sign_in(page, live_server, token, "fay")
    chat = page.locator("#chat")

    say(page, f"暂停{task['id']}号任务")
    expect(chat).to_contain_text(f"任务 #{task['id']} 已暂停", timeout=STEP_TIMEOUT_MS)
    expect(page.locator("#confirm-card")).to_be_hidden()  # held at once, as the Hold button does
    with live_server.api(token) as api:
        assert api.get(f"/tasks/{task['id']}").json()["held_by"] == "fay"

    say(page, f"release {task['id']}")
    expect(chat).to_contain_text(f"Task #{task['id']} is released", timeout=STEP_TIMEOUT_MS)
    with live_server.api(token) as api:
        assert api.get(f"/tasks/{task['id']}").json()["held_by"] is None


def test_a_queued_task_is_made_urgent_from_the_chat_once_the_card_is_confirmed(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    token = live_server.token("gus", "vision")
    task = _a_task_that_waits(live_server, token)
    sign_in(page, live_server, token, "gus")

    say(page, f"make {task['id']} urgent")
    card = page.locator("#confirm-card")
    expect(card).to_contain_text("Change this task?", timeout=STEP_TIMEOUT_MS)
    expect(card).to_contain_text("normal → urgent")
    with live_server.api(token) as api:
        assert (
            api.get(f"/tasks/{task['id']}").json()["priority"] == "normal"
        )  # the card alone changes nothing

        page.locator("#confirm-button").click()
        expect(page.locator("#chat")).to_contain_text(f"Changed task #{task['id']} (priority): queued.")
        assert api.get(f"/tasks/{task['id']}").json()["priority"] == "urgent"


def test_a_whole_sweep_is_cancelled_from_the_chat_only_once_the_card_is_confirmed(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    token = live_server.token("hana", "vision")
    spec = {
        "command": "python train.py --lr {lr}",
        "not_before": "2030-01-01T00:00:00Z",
        "sweep": {"lr": [0.1, 0.2]},
    }
    with live_server.api(token) as api:
        sweep = api.post("/sweeps", json=spec).json()
    sign_in(page, live_server, token, "hana")

    say(page, f"cancel sweep {sweep['id']}")
    card = page.locator("#confirm-card")
    expect(card).to_contain_text("Cancel this sweep?", timeout=STEP_TIMEOUT_MS)
    expect(card).to_contain_text("2 queued")
    with live_server.api(token) as api:
        assert api.get(f"/sweeps/{sweep['id']}").json()["counts"] == {
            "queued": 2
        }  # the card alone does nothing

        page.locator("#confirm-button").click()
        expect(page.locator("#chat")).to_contain_text(f"Sweep #{sweep['id']} is cancelled: 2 cancelled.")
        assert api.get(f"/sweeps/{sweep['id']}").json()["counts"] == {"cancelled": 2}


def _signed_in_with_waiting_tasks(
    live_server: LiveServer, page: Any, user: str, count: int
) -> tuple[str, list[int]]:
    """`user` (team vision) signed in, with `count` tasks that wait until 2030: their token and ids."""
    token = live_server.token(user, "vision")
    spec = {"command": "python train.py", "not_before": "2030-01-01T00:00:00Z"}
    with live_server.api(token) as api:
        ids = [api.post("/tasks", json=spec).json()["id"] for _ in range(count)]
    sign_in(page, live_server, token, user)
    return token, ids


def test_tasks_named_together_are_cancelled_on_one_card_once_it_is_confirmed(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    token, (first, second) = _signed_in_with_waiting_tasks(live_server, page, "ines", 2)

    say(page, f"cancel {first} and {second}")
    card = page.locator("#confirm-card")
    expect(card).to_contain_text("Cancel these 2 tasks?", timeout=STEP_TIMEOUT_MS)
    expect(card).to_contain_text(f"#{second}")
    with live_server.api(token) as api:
        assert {api.get(f"/tasks/{i}").json()["status"] for i in (first, second)} == {"queued"}

        page.locator("#confirm-button").click()
        expect(page.locator("#chat")).to_contain_text(f"Cancelled #{first}, #{second}.")
        assert {api.get(f"/tasks/{i}").json()["status"] for i in (first, second)} == {"cancelled"}


def test_the_same_change_to_two_tasks_shows_their_cards_one_after_another(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    token, (first, second) = _signed_in_with_waiting_tasks(live_server, page, "jun", 2)

    say(page, f"make {first} and {second} urgent")
    card = page.locator("#confirm-card")
    expect(card).to_contain_text(f"#{first}", timeout=STEP_TIMEOUT_MS)
    expect(card).to_contain_text("1 more card after this one.")
    page.locator("#confirm-button").click()
    expect(page.locator("#chat")).to_contain_text(f"Changed task #{first} (priority): queued.")
    expect(card).to_contain_text(f"#{second}")
    expect(card).not_to_contain_text("more card")
    page.locator("#drop-button").click()
    expect(page.locator("#chat")).to_contain_text("Dropped: nothing was changed.")
    with live_server.api(token) as api:
        assert [api.get(f"/tasks/{i}").json()["priority"] for i in (first, second)] == ["urgent", "normal"]


def test_confirm_all_does_every_waiting_card_in_order(live_server: LiveServer, page: Any) -> None:
    from playwright.sync_api import expect

    token, ids = _signed_in_with_waiting_tasks(live_server, page, "kim", 3)
    confirm_all = page.locator("#confirm-all-button")

    say(page, f"make {ids[0]}, {ids[1]} and {ids[2]} high priority")
    expect(page.locator("#confirm-card")).to_contain_text(
        "2 more cards after this one.", timeout=STEP_TIMEOUT_MS
    )
    expect(confirm_all).to_have_text("Confirm all 3")
    confirm_all.click()
    for task_id in ids:
        expect(page.locator("#chat")).to_contain_text(f"Changed task #{task_id} (priority): queued.")
    expect(page.locator("#confirm-card")).to_be_hidden()
    with live_server.api(token) as api:
        assert [api.get(f"/tasks/{i}").json()["priority"] for i in ids] == ["high"] * 3
    say(page, f"cancel {ids[0]}")  # one card alone: no "Confirm all"
    expect(page.locator("#confirm-card")).to_contain_text("Cancel this task?", timeout=STEP_TIMEOUT_MS)
    expect(confirm_all).to_be_hidden()


def test_a_card_changed_in_words_and_then_dropped_submits_nothing(live_server: LiveServer, page: Any) -> None:
    from playwright.sync_api import expect

    token = live_server.token("dave", "vision")
    sign_in(page, live_server, token, "dave")
    say(page, "run `python eval.py` on 1 GPU")
    card = page.locator("#confirm-card")
    expect(card).to_contain_text("1 GPU")
    say(page, "make it 2 GPUs")  # a new card stands in for the first
    expect(card).to_contain_text("2 GPUs")
    page.locator("#drop-button").click()
    expect(page.locator("#chat")).to_contain_text("nothing was submitted")
    expect(card).to_be_hidden()  # the first card does not come back in its place
    with live_server.api(token) as api:
        assert api.get("/tasks").json()["tasks"] == []


def test_a_refused_new_request_takes_the_card_before_it_away(live_server: LiveServer, page: Any) -> None:
    from playwright.sync_api import expect

    token = live_server.token("erin", "vision")
    sign_in(page, live_server, token, "erin")
    say(page, "run `python a.py` on 1 GPU")
    card = page.locator("#confirm-card")
    expect(card).to_contain_text("python a.py")
    say(page, "run `python b.py` on 9 GPUs")  # the node has 4
    expect(page.locator("#chat")).to_contain_text("I can't submit that")
    expect(page.locator("#chat")).to_contain_text("The earlier card (submit python a.py) is dropped")
    expect(card).to_be_hidden()  # no Confirm left under the refusal for the card before it
    with live_server.api(token) as api:
        assert api.get("/tasks").json()["tasks"] == []


def test_a_message_sent_before_the_last_reply_has_finished_is_answered_after_it(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    token = live_server.token("erin", "vision")
    sign_in(page, live_server, token, "erin")
    say(page, "run `python a.py` on 1 GPU")
    say(page, "run `python b.py` on 9 GPUs")  # at once, while the first reply is on its way
    chat = page.locator("#chat")
    expect(chat).to_contain_text("I can't submit that")
    expect(chat).to_contain_text("The earlier card (submit python a.py) is dropped")
    expect(page.locator("#chat-input textarea")).to_have_value("")
    text = chat.inner_text()
    assert text.index("python a.py") < text.index("python b.py") < text.index("I can't submit that")


def test_what_is_typed_while_a_reply_streams_stays_in_the_box(live_server: LiveServer, page: Any) -> None:
    from playwright.sync_api import expect

    token = live_server.token("erin", "vision")
    sign_in(page, live_server, token, "erin")
    say(page, "which GPUs are free?")
    box = page.locator("#chat-input textarea")
    box.fill("run `python c.py` on 1 GPU")
    expect(page.locator("#chat")).to_contain_text("GPU")
    page.wait_for_timeout(500)  # the reply's last update has had time to arrive
    expect(box).to_have_value("run `python c.py` on 1 GPU")
    box.press("Enter")  # Enter sends it, as the button does
    expect(page.locator("#confirm-card")).to_contain_text("python c.py")
    expect(box).to_have_value("")


def test_asking_how_long_i_will_wait_answers_with_the_estimate_and_the_queue_shows_it(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    # Given bob has a task waiting for tonight's off-peak window
    token = live_server.token("bob", "nlp")
    with live_server.api(token) as api:
        task = api.post(
            "/tasks", json={"command": "python finetune.py", "name": "finetune", "offpeak": True}
        ).json()
    sign_in(page, live_server, token, "bob")

    # When he asks, the answer names his task and its estimated start
    say(page, "how long will I wait?")
    chat = page.locator("#chat")
    expect(chat).to_contain_text(f"#{task['id']}")
    expect(chat).to_contain_text("Estimated start")

    # And the queue tab lists it with its position and expected start
    page.get_by_role("tab", name="Queue").click()
    table = page.locator("#queue-table")
    expect(table).to_contain_text("finetune")
    expect(table).to_contain_text(f"{live_server.window[0]:02d}:00")


def test_the_queue_tab_prices_a_new_task_now_or_tonight(live_server: LiveServer, page: Any) -> None:
    from playwright.sync_api import expect

    token = live_server.token("bob", "nlp")
    sign_in(page, live_server, token, "bob")
    page.get_by_role("tab", name="Queue").click()
    page.locator("#estimate-minutes input").fill("120")
    answer = page.locator("#estimate-answer")

    page.locator("#estimate-button").click()  # the GPUs are free: now
    expect(answer).to_contain_text("energy ~")
    expect(answer).not_to_contain_text(f"{live_server.window[0]:02d}:00")

    page.locator("#estimate-tonight input").check()  # only in the off-peak window
    page.locator("#estimate-button").click()
    expect(answer).to_contain_text(f"{live_server.window[0]:02d}:00")
    expect(answer).to_contain_text("waiting for off-peak")
    expect(answer).to_contain_text("energy ~")


BUDGETS = {"day_budget_gpu_h": {"vision": 2.0}, "week_budget_gpu_h": {"vision": 10.0, "nlp": 5.0}}


@pytest.mark.parametrize("server_settings", [BUDGETS])
def test_the_admin_is_signed_in_locally_and_sees_charts_gpus_and_logs(
    live_server: LiveServer, page: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    # Given two teams ran short jobs, and the server wrote its local admin token
    ids = []
    for user, team in (("carol", "vision"), ("erin", "nlp")):
        with live_server.api(live_server.token(user, team)) as api:
            body = {"command": f"echo hello-from-{user}", "name": f"{team}-job", "gpus": 1}
            ids.append(api.post("/tasks", json=body).json()["id"])
    admin_token = ensure_local_admin_token(live_server.cluster).read_text(encoding="utf-8").strip()
    with live_server.api(admin_token) as api:
        wait_until(
            lambda: all(api.get(f"/tasks/{i}").json()["status"] == "succeeded" for i in ids), timeout_s=90
        )

    # When the admin opens the UI on this machine, no token is typed
    open_ui(page, live_server)
    expect(page.locator("#who")).to_contain_text("admin", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#who")).to_contain_text("local admin token")

    # Then the admin tab draws every chart: GPU-hours, busy/idle share, waits, energy, cost, off-peak share
    page.get_by_role("tab", name="Admin").click()
    for chart in ADMIN_CHARTS:
        # vega's drawing (svg or canvas, class `marks`), not Gradio's loading spinner (an svg in the block too)
        expect(page.locator(f"{chart} .vega-embed .marks")).to_be_visible()
    expect(page.locator("#admin-summary")).to_contain_text("GPU-h")
    expect(page.locator("#admin-summary")).to_contain_text("kWh")
    expect(page.locator("#admin-summary")).to_contain_text("off-peak")
    expect(page.locator("#chart-offpeak")).to_contain_text("(all teams)")
    # And quota use vs budget: one bar per team and budget, the 80 % warning line and the budget line
    quota = page.locator("#chart-quota")
    # (by its name: while the chart updates, Gradio's loading spinner is an svg inside the block too)
    expect(quota.get_by_role("img", name="quota use vs budget")).to_be_visible()
    expect(quota.locator(".ns-quota-bar")).to_have_count(3)
    for text in ("vision · day", "vision · week", "nlp · week", "warning at 80 %"):
        expect(quota).to_contain_text(text)
    expect(quota.locator("line.ns-quota-warn")).to_have_count(1)
    expect(quota.locator("line.ns-quota-budget")).to_have_count(1)
    shot = tmp_path / "admin.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes().startswith(PNG_MAGIC) and shot.stat().st_size > 10_000

    # And the GPU panel lists the simulated GPUs; the task log is one click away
    page.get_by_role("tab", name="GPUs").click()
    expect(page.locator("#gpus-table")).to_contain_text("node-a:3")
    page.get_by_role("tab", name="My tasks").click()
    expect(page.locator("#tasks-table")).to_contain_text("vision-job")
    page.locator("#log-task-id input").fill(str(ids[0]))
    page.locator("#show-log-button").click()
    expect(page.locator("#log-view")).to_contain_text("hello-from-carol")


def test_the_results_tab_shows_a_sweeps_params_and_metrics_with_the_best_row_and_a_chart(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    # Given a CPU sweep whose jobs write their loss (lr × 10) and accuracy to metrics.json, all done
    token = live_server.token("frank", "vision")
    command = (
        ": {opt}; printf '{\"loss\": %s, \"acc\": %s}' $(python3 -c 'print({lr} * 10, 1 - {lr})') "
        '> "$NIGHTSHIFT_OUTPUT_DIR/metrics.json"'
    )
    sets = [{"lr": 0.5, "opt": "<i>adam</i>"}, {"lr": 0.1, "opt": "sgd"}, {"lr": 0.3, "opt": "sgd"}]
    spec = {"command": command, "gpus": 0, "name": "grid", "sweep": sets}
    with live_server.api(token) as api:
        sweep = api.post("/sweeps", json=spec).json()
        wait_until(lambda: api.get(f"/sweeps/{sweep['id']}").json()["status"] == "done", timeout_s=90)

    # When frank opens the Results tab and asks for the sweep
    sign_in(page, live_server, token, "frank")
    page.get_by_role("tab", name="Results").click()
    expect(page.locator("#results-hint")).to_contain_text(f"#{sweep['id']}")
    page.locator("#results-sweep-id input").fill(str(sweep["id"]))
    page.locator("#results-show").click()

    # Then the table lists the three runs by loss, smaller first, the best one marked
    note, table = page.locator("#results-note"), page.locator("#results-table")
    expect(note).to_contain_text(f"sweep #{sweep['id']}: 3 tasks, sorted by loss (smaller is better)")
    expect(note).to_contain_text("best: task #")
    expect(note).to_contain_text("lr=0.1 opt=sgd")
    best_row = table.locator("tbody tr").filter(has_text="★ best")
    expect(best_row).to_have_count(1)
    expect(best_row).to_contain_text("0.1")
    expect(table).to_contain_text("0.5")
    expect(table).to_contain_text("acc")
    expect(table).to_contain_text("<i>adam</i>")  # a parameter's text is shown, never run as HTML
    expect(table.locator("i")).to_have_count(0)
    # And the chart of the metric is drawn over the parameter values
    chart = page.locator("#results-chart")
    expect(chart.locator("canvas, svg").first).to_be_visible()

    # When the best is the largest loss instead, the other end of the grid is marked
    page.locator("#results-goal").get_by_label("max").check()
    expect(note).to_contain_text("larger is better")
    expect(note).to_contain_text("lr=0.5 opt=<i>adam</i>")
    expect(table.locator("tbody tr").filter(has_text="★ best")).to_contain_text("0.5")


def test_a_request_in_chinese_gets_a_chinese_card_and_a_chinese_confirmation(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    token = live_server.token("lin", "vision")
    sign_in(page, live_server, token, "lin")

    say(page, "今晚用两张卡跑 `python train.py`")
    card = page.locator("#confirm-card")
    expect(card).to_contain_text("提交这个任务？")
    expect(card).to_contain_text("2 张卡")
    expect(card).to_contain_text("谷时电价")

    page.locator("#confirm-button").click()
    expect(page.locator("#chat")).to_contain_text("已提交任务 #")
    expect(card).to_be_hidden()


def test_a_card_whose_deadline_cannot_be_met_says_so_before_and_after_it_is_confirmed(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    token = live_server.token("nia", "vision")
    sign_in(page, live_server, token, "nia")

    # a 2-hour run that may start at HH:00 and should be done by HH:30
    hour = (datetime.now(UTC).hour + 3) % 24
    say(page, f"run `python train.py` after {hour:02d}:00, done by {hour:02d}:30, takes about 2 hours")
    warning = page.locator("#confirm-card .ns-card-warning")
    expect(warning).to_contain_text("⚠ It cannot finish by its deadline", timeout=STEP_TIMEOUT_MS)
    expect(warning).to_contain_text(f"{hour:02d}:00 (not before), and its ~2.0 h estimate ends it around")

    # and once confirmed, the task is queued all the same and the chat passes on the API's own warning
    page.locator("#confirm-button").click()
    expect(page.locator("#chat")).to_contain_text("): queued. ⚠ It cannot finish by its deadline")


def test_the_chat_served_alone_signs_in_and_submits_through_the_api_it_is_pointed_at(
    live_server: LiveServer, page: Any, make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    # Given `nightshift assistant` on a port of its own, pointed at the API (no Redis or database of its own)
    settings = make_settings(home=tmp_path / "assistant-home", api_url=live_server.url)
    token = live_server.token("mia", "vision")
    with served(assistant_app(settings)) as url:
        alone = LiveServer(url, live_server.cluster, live_server.window)
        # (its check of the API times out after 3 s: on a loaded machine one may, and the next answers)
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=10).json() == {"status": "ok", "api": "ok"})

        # When mia signs in there and confirms a card
        sign_in(page, alone, token, "mia")
        say(page, "run `python eval.py` on 1 GPU")
        expect(page.locator("#confirm-card")).to_contain_text("python eval.py")
        page.locator("#confirm-button").click()
        expect(page.locator("#chat")).to_contain_text("Submitted task #")

    # Then the API it points at holds her task
    with live_server.api(token) as api:
        tasks = api.get("/tasks").json()["tasks"]
    assert [(t["command"], t["user"]) for t in tasks] == [("python eval.py", "mia")]


def test_the_chat_served_alone_says_when_its_api_does_not_answer(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings(home=tmp_path / "assistant-home", api_url="http://127.0.0.1:9")
    with served(assistant_app(settings)) as url:
        health = httpx.get(f"{url}/healthz").json()
    assert health["status"] == "ok" and health["api"].startswith("unreachable at http://127.0.0.1:9")


def test_signing_in_as_someone_else_clears_what_the_last_person_looked_at(
    live_server: LiveServer, page: Any
) -> None:
    from playwright.sync_api import expect

    # Given carol read her task's log and asked for results by tag, with the sweep id box left empty
    carol = live_server.token("carol", "vision")
    with live_server.api(carol) as api:
        task = api.post("/tasks", json={"command": "echo secret-of-carol", "gpus": 0, "tags": ["t1"]}).json()
        wait_until(lambda: api.get(f"/tasks/{task['id']}").json()["status"] == "succeeded", timeout_s=60)
    sign_in(page, live_server, carol, "carol")
    page.get_by_role("tab", name="My tasks").click()
    # typed as soon as the page names her: the sign-in has already cleared the last person's lookups
    page.locator("#log-task-id input").fill(str(task["id"]))
    page.locator("#show-log-button").click()
    expect(page.locator("#log-view")).to_contain_text("secret-of-carol", timeout=STEP_TIMEOUT_MS)
    page.get_by_role("tab", name="Results").click()
    page.locator("#results-tag input, #results-tag textarea").first.fill("t1")
    page.locator("#results-show").click()
    expect(page.locator("#results-table")).to_contain_text(str(task["id"]))  # no "less than 1" error toast

    # When she signs out, then the page says so with nothing of hers left (read at once: no later step clears)
    page.locator("#sign-out-button").click()
    expect(page.locator("#who")).to_contain_text("Not signed in")
    assert "succeeded" not in page.locator("#results-table").inner_text()  # her run's row
    page.get_by_role("tab", name="My tasks").click()
    assert "secret-of-carol" not in page.locator("#log-view").inner_text()
    assert page.locator("#log-task-id input").input_value() == ""

    # When dave signs in in the same tab and at once asks for the log of carol's task
    dave = live_server.token("dave", "nlp")
    page.locator("#token-input input").fill(dave)
    page.locator("#sign-in-button").click()
    expect(page.locator("#who")).to_contain_text("Signed in as dave")
    page.locator("#log-task-id input").fill(str(task["id"]))
    page.locator("#show-log-button").click()

    # Then he is told there is no such task (another team's), and what he typed is not wiped by the sign-in
    expect(page.locator("#log-view")).to_contain_text("not found", timeout=STEP_TIMEOUT_MS)
    assert "secret-of-carol" not in page.locator("#log-view").inner_text()
    assert page.locator("#log-task-id input").input_value() == str(task["id"])
