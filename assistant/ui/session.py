"""One signed-in browser session: the person's token and client, their assistant, chat and pending card.

The UI holds no powers of its own: every call goes to the HTTP API with the person's token, over the
address the request reached this very server at, so the API checks identity and rights as for any client.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from api.client import ClientError
from assistant.agent import Assistant
from assistant.client import AssistantClient
from assistant.ui.local import is_local_owner
from scheduler.settings import Settings

ChatMessage = dict[str, Any]


def api_base_url(request: Any, settings: Settings) -> str:
    """Where this server answers: the local socket the request came in on, else `settings.api_url`."""
    inner = getattr(request, "request", None)
    scope = getattr(inner, "scope", None)
    server = scope.get("server") if isinstance(scope, dict) else None
    if server and server[1]:
        host = str(server[0])
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{server[1]}"
    return settings.api_url


def local_admin_token(request: Any, settings: Settings) -> str | None:
    """The local admin token, for a browser on this machine run by the server's own OS user; else None."""
    if not is_local_owner(request):
        return None
    try:
        return settings.local_token_file.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


@dataclass
class UiSession:
    """A signed-in person: who they are (from GET /me), their client, assistant, chat and pending card."""

    settings: Settings
    client: AssistantClient
    user: str
    team: str
    admin: bool
    local: bool = False
    messages: list[ChatMessage] = field(default_factory=list)
    card: dict[str, Any] | None = None
    _assistant: Assistant | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)  # one chat turn or card click at a time
    # the tasks table's bookkeeping below: its own lock, so the Tasks tab answers while a reply streams
    _view_lock: threading.Lock = field(default_factory=threading.Lock)
    # reads of the tasks table, in the order they began, and the last one the page shows: events of one page
    # run side by side, so a refresh begun before a hold may answer after it, with the table before the hold
    _tasks_reads: int = 0
    _tasks_shown: int = 0
    # what the last click on a task said ("Task 5 is held: ..."): the refreshes that come by themselves (the
    # tab's, the sign-in's, a card's, each maybe answering late on a loaded machine) keep saying it instead of
    # the count; a refresh the person asks for (Refresh, another status) says the count again
    _action_note: str | None = None

    @property
    def assistant(self) -> Assistant:
        """The person's chat agent (made on first use: tools bound to their client)."""
        if self._assistant is None:
            self._assistant = Assistant(self.settings, self.client, user=self.user, team=self.team)
        return self._assistant

    @property
    def language(self) -> str:
        """The language of the conversation (`en`, `zh`): the person's last message's."""
        return self._assistant.language() if self._assistant is not None else "en"

    def begin_tasks_read(self) -> int:
        """A number for a read of the tasks table about to begin (later reads get larger ones)."""
        with self._view_lock:
            self._tasks_reads += 1
            return self._tasks_reads

    def may_show_tasks_read(self, read: int) -> bool:
        """True when read `read` may replace what the page shows (no read begun after it was shown first)."""
        with self._view_lock:
            if read < self._tasks_shown:
                return False
            self._tasks_shown = read
            return True

    def note_action(self, said: str) -> None:
        """Remember what a click on a task (hold, release, priority) said, to keep it on the page until the
        person asks for the table again."""
        with self._view_lock:
            self._action_note = said

    def recent_action_note(self) -> str | None:
        """What the last click on a task said, until `forget_action_note`; else None."""
        with self._view_lock:
            return self._action_note

    def forget_action_note(self) -> None:
        """The person asked for the table (Refresh, another status): its note is the count again."""
        with self._view_lock:
            self._action_note = None

    def say(self, role: str, content: str) -> None:
        """Append a chat message (what the Chatbot shows)."""
        self.messages.append({"role": role, "content": content})

    def next_card(self) -> dict[str, Any] | None:
        """The oldest action still waiting for a click (after one was confirmed or dropped): a turn's cards
        ("make 12 and 13 urgent") come in the order asked."""
        if self._assistant is None:
            return None
        pending = self._assistant.actions.pending()
        return pending[0].card if pending else None

    def cards_after(self) -> int:
        """How many cards wait behind the one shown, to be confirmed or dropped one after another."""
        if self._assistant is None:
            return 0
        return max(0, len(self._assistant.actions.pending()) - 1)

    def close(self) -> None:
        """Close the person's HTTP connections."""
        self.client.close()


def open_session(settings: Settings, base_url: str, token: str, *, local: bool = False) -> UiSession:
    """Sign in: check the token with GET /me; raises ClientError (401) when the API refuses it."""
    client = AssistantClient(base_url, token.strip())
    try:
        me = client.get("/me")
    except ClientError:
        client.close()
        raise
    return UiSession(
        settings, client, user=str(me["user"]), team=str(me["team"]), admin=bool(me["admin"]), local=local
    )


def close_session(session: UiSession | None) -> None:
    """Gradio's delete callback for the session state (tab closed, state expired)."""
    if isinstance(session, UiSession):
        session.close()
