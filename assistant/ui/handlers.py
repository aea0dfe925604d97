"""The UI's event handlers: each reads the person's session and calls the API with their token.

Handlers return plain values (and `gr.update`s for visibility); `assistant.ui.app` wires them to components.
A refused or failed call shows the API's own message; it never raises into Gradio's error toast.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Iterator
from typing import Any, get_args

import gradio as gr
import pandas as pd

from api.client import ClientError
from assistant.agent import Turn, make_model
from assistant.client import AssistantClient
from assistant.replies import dropped_words
from assistant.ui import views
from assistant.ui.chat_turns import ChatTurns
from assistant.ui.session import UiSession, api_base_url, local_admin_token, open_session
from scheduler.clock import local_zone
from scheduler.reports import MAX_REPORT_DAYS
from scheduler.settings import Settings
from scheduler.spec import Priority

log = logging.getLogger("nightshift.ui")
LOG_TAIL_LINES = 400
TASK_STATUSES = ["all", "queued", "running", "succeeded", "failed", "cancelled"]
PRIORITIES = list(get_args(Priority))
GOAL_AUTO = "auto"
GOALS = [GOAL_AUTO, "min", "max"]
ChatUpdate = tuple[list[dict[str, Any]], Any, Any, str]


class Handlers:
    """Event handlers bound to this server's settings (time zone, model, token file).

    `api_url`: where the API answers when the UI is served apart from it (`nightshift assistant`); None
    when the UI is mounted in the API's own app, whose address each request came in on.
    """

    def __init__(self, settings: Settings, api_url: str | None = None) -> None:
        self.settings = settings
        self.api_url = api_url
        self.zone = local_zone(settings.timezone)
        self.model_label = make_model(settings)[1]

    def _api(self, request: gr.Request) -> str:
        return self.api_url or api_base_url(request, self.settings)

    # --- identity -------------------------------------------------------------------------------------

    def view(self, session: UiSession | None, note: str = "") -> tuple[Any, ...]:
        """Everything that depends on who is signed in (see `app.IDENTITY_OUTPUTS` for the order)."""
        signed_in = session is not None
        if session is None:
            who = "Not signed in."
        else:
            how = " (local admin token of this machine)" if session.local else ""
            role = ", admin" if session.admin else ""
            who = f"Signed in as **{session.user}** (team {session.team}{role}){how}."
        return (
            session,
            gr.update(visible=not signed_in),
            gr.update(visible=signed_in),
            who,
            gr.update(visible=bool(session and session.admin)),
            list(session.messages) if session else [],
            *self._card_update(session),
            note,
        )

    def sign_in(self, token: str, session: UiSession | None, request: gr.Request) -> tuple[Any, ...]:
        """Sign in with a typed token (checked by GET /me)."""
        if not token or not token.strip():
            return self.view(session, "Paste an API token (`nightshift token create --user U --team T`).")
        try:
            new = open_session(self.settings, self._api(request), token)
        except ClientError as exc:
            return self.view(session, f"Sign-in refused: {exc.message}")
        if session is not None:
            session.close()
        return self.view(new)

    def auto_sign_in(self, session: UiSession | None, request: gr.Request) -> tuple[Any, ...]:
        """On page load: use the local admin token when the browser runs on this machine as our user.
        Anyone else's page is left as it is: the load event may run after a sign-in typed at once (its
        state read before it), and a "not signed in" answer would then sign that person out."""
        if session is not None:
            return self.view(session)
        token = local_admin_token(request, self.settings)
        if token is None:
            return tuple(gr.skip() for _ in self.view(None))
        try:
            return self.view(open_session(self.settings, self._api(request), token, local=True))
        except ClientError as exc:
            return self.view(None, f"The local admin token was refused: {exc.message}")

    def sign_out(self, session: UiSession | None) -> tuple[Any, ...]:
        """Forget the token of this browser tab."""
        if session is not None:
            session.close()
        return self.view(None, "Signed out.")

    # --- chat -----------------------------------------------------------------------------------------

    def _card_update(self, session: UiSession | None) -> tuple[Any, str, Any]:
        """The card box, the card shown, and "Confirm all" (only while more cards wait behind it)."""
        card = session.card if session is not None else None
        if session is None or card is None:
            return gr.update(visible=False), "", gr.update(visible=False)
        after = session.cards_after()
        return (
            gr.update(visible=True),
            views.card_html(card, self.zone, session.language, after),
            gr.update(visible=after > 0, value=f"Confirm all {after + 1}"),
        )

    def chat(
        self,
        text: str,
        session: UiSession | None,
        number: float | None = None,
        turns: ChatTurns | None = None,
    ) -> Iterator[ChatUpdate]:
        """One chat turn, the reply streamed as it is written; a submit or cancel shows the confirm card.

        The browser has already taken `text` out of the input box (`app.build_ui`) and numbered it; the
        page's `turns` answer its messages in that order. What is typed in the box while the reply streams
        is left alone (`typed_on`)."""
        with (turns or ChatTurns()).turn(int(number) if number else None):
            yield from self._chat_turn(text, session)

    def _chat_turn(self, text: str, session: UiSession | None) -> Iterator[ChatUpdate]:
        typed_on = gr.update()
        if session is None:  # the message goes back into the box, to send once signed in
            yield [{"role": "assistant", "content": "Sign in first (token above)."}], text, gr.update(), ""
            return
        text = (text or "").strip()
        if not text:
            yield list(session.messages), typed_on, *self._card_update(session)
            return
        with session.lock:
            session.say("user", text)
            session.say("assistant", "…")
            yield list(session.messages), typed_on, *self._card_update(session)
            streamed, turn = "", None
            try:
                for part in session.assistant.stream(text):
                    if isinstance(part, Turn):
                        turn = part
                    elif part:
                        streamed += part
                        session.messages[-1]["content"] = streamed
                        yield list(session.messages), typed_on, *self._card_update(session)
            except Exception as exc:  # the model or the network failed: say so, keep the session
                log.exception("chat turn failed")
                streamed = f"Sorry, that failed: {type(exc).__name__}: {exc}"
            reply = (turn.reply if turn is not None and turn.reply else streamed) or "(no answer)"
            session.messages[-1]["content"] = reply
            # the turn's first card ("make 12 and 13 urgent": one each, in order), else the next still waiting
            session.card = turn.cards[0] if turn is not None and turn.cards else session.next_card()
            yield list(session.messages), typed_on, *self._card_update(session)

    def confirm(self, session: UiSession | None) -> tuple[Any, ...]:
        """Perform the card's action through the API with the person's token."""
        if session is None or session.card is None:
            return self.view(session)
        with session.lock:
            self._say_confirmed(session, session.assistant.confirm(str(session.card["action_id"])))
            session.card = session.next_card()
        return self.view(session)

    @staticmethod
    def _say_confirmed(session: UiSession, result: dict[str, Any]) -> None:
        """What a confirmed card did, or why not, as the assistant's message."""
        if result.get("ok"):
            session.say("assistant", str(result["message"]))
            return
        details = "; ".join(str(e.get("message")) for e in result.get("errors") or [])
        session.say("assistant", f"Not done: {result.get('error')}" + (f" ({details})" if details else ""))

    def confirm_all(self, session: UiSession | None) -> tuple[Any, ...]:
        """Perform the card shown and every card waiting behind it, in order, each said as it went (a refused
        one does not stop the others)."""
        if session is None or session.card is None:
            return self.view(session)
        with session.lock:
            while session.card is not None:
                self._say_confirmed(session, session.assistant.confirm(str(session.card["action_id"])))
                session.card = session.next_card()
        return self.view(session)

    def drop(self, session: UiSession | None) -> tuple[Any, ...]:
        """Forget the card's action without doing it."""
        if session is None or session.card is None:
            return self.view(session)
        with session.lock:
            session.assistant.drop(str(session.card["action_id"]))
            session.say("assistant", dropped_words(str(session.card.get("kind")), session.language))
            session.card = session.next_card()
        return self.view(session)

    # --- tables ---------------------------------------------------------------------------------------

    def tasks(self, session: UiSession | None, status: str) -> tuple[Any, Any]:
        """The person's tasks (their team's; every team's for admins), optionally one status; nothing changes
        when a read begun later (a hold's) is already shown."""
        if session is None:
            return views.tasks_frame([]), "Sign in to see your tasks."
        read = session.begin_tasks_read()
        try:
            tasks = session.client.list_tasks(status=None if status in ("", "all") else status, limit=200)
            note = session.recent_action_note() or f"{len(tasks)} task(s)."
            shown: tuple[Any, Any] = (views.tasks_frame(tasks, self.zone), note)
        except ClientError as exc:
            shown = (views.tasks_frame([]), f"Could not load tasks: {exc.message}")
        return shown if session.may_show_tasks_read(read) else (gr.skip(), gr.skip())

    def refresh_tasks(self, session: UiSession | None, status: str) -> tuple[Any, Any]:
        """The tasks table as the person asked for it (Refresh, another status): with its count, not what
        the last click on a task said."""
        if session is not None:
            session.forget_action_note()
        return self.tasks(session, status)

    def hold(self, session: UiSession | None, task_id: float | None, status: str) -> tuple[Any, Any]:
        """Hold the task in the id box back (it stays queued and starts nowhere until released); the table."""
        return self._hold_or_release(session, task_id, status, hold=True)

    def release(self, session: UiSession | None, task_id: float | None, status: str) -> tuple[Any, Any]:
        """Let the held task in the id box start again; the table."""
        return self._hold_or_release(session, task_id, status, hold=False)

    def set_priority(
        self, session: UiSession | None, task_id: float | None, priority: str | None, status: str
    ) -> tuple[Any, Any]:
        """Give the queued task in the id box this priority (it keeps its place in time); the table."""

        def change(number: int, client: AssistantClient) -> str:
            client.change(number, {"priority": priority})
            return f"Task {number} now has priority {priority}; it keeps its place in time."

        return self._act_on_task(session, task_id, status, change)

    def _hold_or_release(
        self, session: UiSession | None, task_id: float | None, status: str, hold: bool
    ) -> tuple[Any, Any]:
        def act(number: int, client: AssistantClient) -> str:
            if hold:
                client.hold(number)
                return f"Task {number} is held: it starts only after you release it."
            client.release(number)
            return f"Task {number} is released: it is queued again."

        return self._act_on_task(session, task_id, status, act)

    def _act_on_task(
        self,
        session: UiSession | None,
        task_id: float | None,
        status: str,
        act: Callable[[int, AssistantClient], str],
    ) -> tuple[Any, Any]:
        """`act` on the task in the id box with the person's client; the tasks table and what was done (or
        why not)."""
        if session is None:
            return self.tasks(session, status)
        if task_id is None or task_id < 1:  # an empty number box reads 0
            said = "Enter a task id first (the number in the table)."
        else:
            try:
                said = act(int(task_id), session.client)
            except ClientError as exc:
                said = f"Not done: {exc.message}"
        session.note_action(said)
        return self.tasks(session, status)[0], said

    def log_text(self, session: UiSession | None, task_id: float | None) -> str:
        """The last lines of a task's log."""
        if session is None or task_id is None:
            return ""
        if task_id < 1:  # an empty number box reads 0
            return "[enter a task id: the number `nightshift ls` shows]"
        try:
            text = session.client.logs(int(task_id), tail=LOG_TAIL_LINES)
        except ClientError as exc:
            return f"[{exc.message}]"
        return text or "[the log is empty so far]"

    def select_task(
        self, session: UiSession | None, frame: pd.DataFrame, event: gr.SelectData
    ) -> tuple[float | None, str]:
        """Clicking a row of the task table shows that task's log."""
        try:
            row = event.index[0] if isinstance(event.index, list | tuple) else event.index
            task_id = float(frame.iloc[int(row)]["id"])
        except (IndexError, KeyError, TypeError, ValueError):
            return None, ""
        return task_id, self.log_text(session, task_id)

    def queue(self, session: UiSession | None) -> tuple[pd.DataFrame, str]:
        """The queue in start order with expected starts (other teams' tasks count but are not shown)."""
        if session is None:
            return views.queue_frame({}), "Sign in to see the queue."
        try:
            queue = session.client.queue()
        except ClientError as exc:
            return views.queue_frame({}), f"Could not load the queue: {exc.message}"
        shown = len(queue.get("entries", []))
        return views.queue_frame(queue, self.zone), f"{queue.get('length', 0)} task(s) queued; {shown} shown."

    def estimate(
        self,
        session: UiSession | None,
        gpus: float | None,
        memory_gb: float | None,
        minutes: float | None,
        tonight: bool = False,
    ) -> str:
        """What-if: when would a task of this size start if submitted now (`tonight`: only in the off-peak
        window), and what its energy would cost."""
        if session is None:
            return "Sign in first."
        if gpus is not None and gpus < 0:
            return "No estimate: GPUs must be 0 (CPU only) or more."
        try:
            answer = session.client.estimate(
                gpus=int(gpus or 0), gpu_memory_gb=memory_gb or None, estimated_minutes=minutes or None,
                offpeak=bool(tonight),
            )  # fmt: skip
        except ClientError as exc:
            return f"No estimate: {exc.message}"
        return views.estimate_text(answer, self.zone)

    def gpus(self, session: UiSession | None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
        """Every GPU's memory and utilization, and which tasks hold it."""
        empty = views.gpus_frame({}), views.gpu_usage_frame({})
        if session is None:
            return *empty, "Sign in to see the GPUs."
        try:
            view = session.client.gpus()
        except ClientError as exc:
            return *empty, f"Could not load the GPUs: {exc.message}"
        alive = sum(1 for node in view.get("nodes", []) if node.get("alive"))
        note = f"{len(view.get('gpus', []))} GPU(s) on {alive} live node(s)."
        return views.gpus_frame(view), views.gpu_usage_frame(view), note

    def admin(self, session: UiSession | None, days: float | None) -> tuple[Any, ...]:
        """Admin charts: GPU-hours by team, busy/idle share per GPU, waits p50/p90 over time, energy and
        cost per day, off-peak share, quota use vs budget (see `app` for the order)."""
        empty = (
            views.gpu_hours_frame({}),
            views.gpu_share_frame({}, {}),
            views.waits_frame({}),
            views.energy_cost_frame({}),
            views.energy_cost_frame({}),
            views.offpeak_frame({}),
            views.quota_html({}),
        )
        if session is None or not session.admin:
            return "Admins only.", *empty
        if days is not None and not 1 <= days <= MAX_REPORT_DAYS:
            return f"Days must be between 1 and {MAX_REPORT_DAYS}.", *empty
        window = int(days or 7)
        try:
            by_team = session.client.utilization(window, "team")
            by_gpu = session.client.utilization(window, "gpu")
            gpus_view = session.client.gpus()
        except ClientError as exc:
            return f"Could not load the report: {exc.message}", *empty
        energy = views.energy_cost_frame(by_team)
        return (
            views.report_summary(by_team),
            views.gpu_hours_frame(by_team),
            views.gpu_share_frame(by_gpu, gpus_view),
            views.waits_frame(by_team, self.zone),
            energy,
            energy,
            views.offpeak_frame(by_team),
            views.quota_html(by_team),
        )

    # --- results --------------------------------------------------------------------------------------

    def results(
        self,
        session: UiSession | None,
        sweep_id: float | None,
        tag: str | None,
        sort: str | None = None,
        goal: str | None = GOAL_AUTO,
        metric: str | None = None,
    ) -> tuple[str, pd.DataFrame, pd.DataFrame, Any, Any, Any]:
        """Parameters vs metrics of a sweep (or of the tasks with a tag), sorted by `sort` toward `goal`.

        Returns the note (HTML), the table, the chart's data and updates of the sort, goal and chart-metric
        choices. Without `sort` the API picks the first metric; the chart shows `metric`, else the sort one.
        """
        keep = gr.update(), gr.update(), gr.update()
        empty = views.results_frame({}), views.results_chart_frame({}, None)
        if session is None:
            return "<p>Sign in to see results.</p>", *empty, *keep
        tag = (tag or "").strip()
        if sweep_id == 0:  # an empty number box reads 0: no sweep id
            sweep_id = None
        if sweep_id is None and not tag:
            return "<p>Enter a sweep id or a tag.</p>", *empty, *keep
        if sweep_id is not None and int(sweep_id) < 1:
            return "<p>A sweep id is a positive number.</p>", *empty, *keep
        chosen_goal = goal if goal in ("min", "max") else None
        try:
            table = session.client.results(
                sweep_id=int(sweep_id) if sweep_id is not None else None,
                tag=None if sweep_id is not None else tag,
                sort=sort or None,
                goal=chosen_goal,
            )
        except ClientError as exc:
            return f"<p>Could not load the results: {html.escape(exc.message)}</p>", *empty, *keep
        numeric = views.numeric_metrics(table)
        sort_choices = list(dict.fromkeys([*numeric, *([table["sort"]] if table.get("sort") else [])]))
        shown = metric if metric in numeric else table.get("sort") if table.get("sort") in numeric else None
        if shown is None and numeric:
            shown = numeric[0]
        return (
            views.results_note(table, shown),
            views.results_frame(table),
            views.results_chart_frame(table, shown),
            gr.update(choices=sort_choices, value=table.get("sort")),
            gr.update(value=chosen_goal or GOAL_AUTO),
            gr.update(choices=numeric, value=shown),
        )

    def recent_sweeps(self, session: UiSession | None) -> str:
        """A hint on the Results tab: the sweep ids among the person's (team's) recent tasks."""
        if session is None:
            return ""
        try:
            ids = views.recent_sweeps(session.client.list_tasks(limit=200))
        except ClientError:
            return ""
        if not ids:
            return "No sweeps among your recent tasks (submit one with a `sweep`)."
        return "Recent sweeps: " + ", ".join(f"#{sweep_id}" for sweep_id in ids)
