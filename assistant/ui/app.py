"""The Gradio app: sign-in, chat with confirm cards, my tasks + logs, queue, GPUs, results, admin charts.

Element ids (`elem_id`) are part of the page's contract for the browser tests: `token-input`,
`sign-in-button`, `who`, `model-label`, `chat`, `chat-input`, `send-button`, `confirm-card`,
`confirm-button`, `confirm-all-button` (while several cards wait), `drop-button`, `tasks-table`,
`tasks-note`, `tasks-refresh`, `log-view`, `hold-button`, `release-button`, `priority-choice`,
`priority-button`, `queue-table`, `queue-refresh`, `gpus-table`, `gpus-refresh`, `chart-gpu-hours`,
`chart-gpu-share`, `chart-waits`, `chart-energy`, `chart-cost`, `chart-offpeak`, `chart-quota`,
`results-sweep-id`, `results-tag`, `results-show`, `results-sort`, `results-goal`, `results-metric`,
`results-note`, `results-table`, `results-chart`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from assistant.ui import views
from assistant.ui.chat_turns import ChatTurns
from assistant.ui.handlers import GOAL_AUTO, GOALS, PRIORITIES, TASK_STATUSES, Handlers
from assistant.ui.session import close_session
from scheduler.settings import Settings

SESSION_TTL_S = 12 * 3600
# The browser takes the message out of the box at once and numbers it: the page's count of messages sent
NUMBER_THE_MESSAGE = """(typed) => {
    window.nightshiftSent = (window.nightshiftSent || 0) + 1;
    return [typed, '', window.nightshiftSent];
}"""
CSS = """
.ns-card { border: 2px solid var(--color-accent); border-radius: 8px; padding: 8px 12px; overflow-x: auto; }
.ns-card-table td { overflow-wrap: anywhere; }
.ns-card-table th { text-align: left; padding-right: 12px; white-space: nowrap; }
.ns-card-note { font-style: italic; }
.ns-card-warning { font-weight: 600; }
.ns-quota { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px 12px; }
.ns-quota svg { max-width: 100%; height: auto; }
.ns-chart-note { font-style: italic; }
"""


def _when_signed_in(refresh: Callable[..., tuple[Any, ...]], outputs: int) -> Callable[..., tuple[Any, ...]]:
    """`refresh` for a page someone is signed in on, else no change to its `outputs` outputs: after a page
    load, a late empty refresh would blank what a sign-in typed meanwhile just filled in."""

    def refresh_if_signed_in(state: Any, *inputs: Any) -> tuple[Any, ...]:
        if state is None:
            return tuple(gr.skip() for _ in range(outputs))
        return refresh(state, *inputs)

    return refresh_if_signed_in


def build_ui(settings: Settings, api_url: str | None = None) -> gr.Blocks:
    """The whole UI for this server; every browser tab gets its own session state. `api_url`: the API's
    address when the UI is served apart from it (else each request's own server)."""
    handlers = Handlers(settings, api_url)
    with gr.Blocks(title="nightshift", analytics_enabled=False, fill_width=True) as demo:
        session = gr.State(None, time_to_live=SESSION_TTL_S, delete_callback=close_session)
        sent = gr.Textbox(visible=False)  # the chat message being answered, taken out of the input box
        sent_number = gr.Number(visible=False, precision=0)  # its place among the page's messages (1, 2, ...)
        turns = gr.State(ChatTurns)  # one per page: answers the page's messages in the order they were sent
        with gr.Row(equal_height=True):
            gr.Markdown("## nightshift: GPU queue assistant")
            who = gr.Markdown("Not signed in.", elem_id="who")
            gr.Markdown(f"Answering: **{handlers.model_label}**", elem_id="model-label")
        with gr.Row(equal_height=True, elem_id="sign-in") as sign_in_box:
            token = gr.Textbox(
                label="API token", type="password", elem_id="token-input", scale=4,
                placeholder="from `nightshift token create --user U --team T`",
            )  # fmt: skip
            sign_in = gr.Button("Sign in", variant="primary", elem_id="sign-in-button", scale=1)
        with gr.Row(visible=False) as account_row:
            sign_out = gr.Button("Sign out", size="sm", elem_id="sign-out-button", scale=0, min_width=100)
        note = gr.Markdown(elem_id="sign-in-note")

        with gr.Tabs():
            with gr.Tab("Chat", id="chat-tab"):
                chatbot = gr.Chatbot(
                    elem_id="chat", height=440, feedback_options=None, label="assistant",
                    group_consecutive_messages=False, buttons=["copy_all"],
                )  # fmt: skip
                with gr.Column(visible=False, elem_id="confirm-card", variant="panel") as card_box:
                    card_body = gr.HTML(elem_id="card-body", js_on_load=None)
                    with gr.Row():
                        confirm = gr.Button("Confirm", variant="primary", elem_id="confirm-button")
                        confirm_all = gr.Button("Confirm all", elem_id="confirm-all-button", visible=False)
                        drop = gr.Button("Drop", variant="stop", elem_id="drop-button")
                with gr.Row(equal_height=True):
                    text = gr.Textbox(
                        show_label=False, scale=8, elem_id="chat-input", submit_btn=False,
                        placeholder="e.g. run `python train.py` tonight on 2 GPUs · how long will I wait?",
                    )  # fmt: skip
                    send = gr.Button("Send", variant="primary", scale=1, elem_id="send-button")
            with gr.Tab("My tasks", id="tasks-tab") as tasks_tab:
                with gr.Row(equal_height=True):
                    status = gr.Dropdown(TASK_STATUSES, value="all", label="status", scale=1)
                    refresh_tasks = gr.Button("Refresh", scale=0, elem_id="tasks-refresh")
                tasks_note = gr.Markdown(elem_id="tasks-note")
                tasks_table = gr.Dataframe(
                    views.tasks_frame([]), interactive=False, elem_id="tasks-table", wrap=True
                )
                with gr.Row(equal_height=True):
                    log_id = gr.Number(None, label="task id", precision=0, scale=1, elem_id="log-task-id")
                    show_log = gr.Button("Show log", scale=0, elem_id="show-log-button")
                    hold = gr.Button("Hold", scale=0, elem_id="hold-button")
                    release = gr.Button("Release", scale=0, elem_id="release-button")
                    new_priority = gr.Dropdown(
                        PRIORITIES, value="high", label="priority", scale=0, elem_id="priority-choice"
                    )
                    set_priority = gr.Button("Set priority", scale=0, elem_id="priority-button")
                log_view = gr.Code(label="log (last lines)", language=None, elem_id="log-view", max_lines=30)
            with gr.Tab("Queue", id="queue-tab") as queue_tab:
                with gr.Row(equal_height=True):
                    queue_note = gr.Markdown()
                    refresh_queue = gr.Button("Refresh", scale=0, elem_id="queue-refresh")
                queue_table = gr.Dataframe(
                    views.queue_frame({}), interactive=False, elem_id="queue-table", wrap=True
                )
                gr.Markdown("**How long would a new task wait?**")
                with gr.Row(equal_height=True):
                    est_gpus = gr.Number(1, label="GPUs", precision=0)  # checked by the handler, in words
                    est_mem = gr.Number(None, label="GB free per GPU (optional)")
                    est_minutes = gr.Number(
                        None, label="estimated minutes (optional)", elem_id="estimate-minutes"
                    )
                    est_tonight = gr.Checkbox(False, label="tonight (off-peak)", elem_id="estimate-tonight")
                    estimate = gr.Button("Estimate", scale=0, elem_id="estimate-button")
                estimate_out = gr.Markdown(elem_id="estimate-answer")
            with gr.Tab("GPUs", id="gpus-tab") as gpus_tab:
                with gr.Row(equal_height=True):
                    gpus_note = gr.Markdown()
                    refresh_gpus = gr.Button("Refresh", scale=0, elem_id="gpus-refresh")
                gpus_table = gr.Dataframe(views.gpus_frame({}), interactive=False, elem_id="gpus-table")
                gpus_chart = gr.BarPlot(
                    views.gpu_usage_frame({}), x="gpu", y="percent", color="measure", y_lim=[0, 100],
                    title="memory used and utilization per GPU (%)", elem_id="chart-gpus",
                )  # fmt: skip
            with gr.Tab("Admin", id="admin-tab", visible=False) as admin_tab:
                with gr.Row(equal_height=True):
                    days = gr.Number(7, label="days", precision=0, scale=1)
                    refresh_admin = gr.Button("Refresh charts", scale=0, elem_id="admin-refresh")
                admin_summary = gr.Markdown(elem_id="admin-summary")
                hours_chart = gr.BarPlot(
                    views.gpu_hours_frame({}), x="team", y="gpu_hours", y_lim=[0, None],
                    title="GPU-hours by team", elem_id="chart-gpu-hours",
                )  # fmt: skip
                share_chart = gr.BarPlot(
                    views.gpu_share_frame({}, {}), x="gpu", y="percent", color="state", y_lim=[0, 100],
                    title="busy and idle share per GPU (%)", elem_id="chart-gpu-share",
                    color_map={"busy": "#d9534f", "idle": "#5cb85c"},
                )  # fmt: skip
                # points, not lines: a line of one point (a 7-day view has one bucket a day) draws nothing
                waits_chart = gr.ScatterPlot(
                    views.waits_frame({}), x="time", y="wait_min", color="percentile", y_lim=[0, None],
                    title="waits over time (minutes, p50 and p90)", elem_id="chart-waits",
                )  # fmt: skip
                with gr.Row(equal_height=True):
                    energy_chart = gr.BarPlot(
                        views.energy_cost_frame({}), x="day", y="energy_kwh", color="team", y_lim=[0, None],
                        title="energy per day by team (kWh)", elem_id="chart-energy",
                    )  # fmt: skip
                    cost_chart = gr.BarPlot(
                        views.energy_cost_frame({}), x="day", y="cost", color="team", y_lim=[0, None],
                        title="cost per day by team (currency in the summary)", elem_id="chart-cost",
                    )  # fmt: skip
                offpeak_chart = gr.BarPlot(
                    views.offpeak_frame({}), x="team", y="percent", color="when", y_lim=[0, 100],
                    title="off-peak share of the GPU-hours (%)", elem_id="chart-offpeak",
                    color_map={"off-peak": "#337ab7", "peak": "#f0ad4e"},
                )  # fmt: skip
                quota_chart = gr.HTML(views.quota_html({}), elem_id="chart-quota", js_on_load=None)
            with gr.Tab("Results", id="results-tab") as results_tab:
                results_hint = gr.Markdown(elem_id="results-hint")
                with gr.Row(equal_height=True):
                    sweep_id = gr.Number(
                        None, label="sweep id", precision=0, scale=1, elem_id="results-sweep-id"
                    )
                    results_tag = gr.Textbox(
                        label="or tag (when no sweep id)", scale=2, elem_id="results-tag", max_length=64
                    )
                    show_results = gr.Button(
                        "Show results", variant="primary", scale=0, elem_id="results-show"
                    )
                with gr.Row(equal_height=True):
                    sort_metric = gr.Dropdown([], value=None, label="sort by metric", elem_id="results-sort")
                    goal = gr.Radio(GOALS, value=GOAL_AUTO, label="best is", elem_id="results-goal")
                    chart_metric = gr.Dropdown([], value=None, label="chart metric", elem_id="results-metric")
                results_note = gr.HTML(elem_id="results-note", js_on_load=None)
                results_table = gr.Dataframe(
                    views.results_frame({}), interactive=False, elem_id="results-table", wrap=True
                )
                results_chart = gr.BarPlot(
                    views.results_chart_frame({}, None), x="run", y="value", color="row",
                    title="chosen metric per run", x_title="parameters", y_title="metric",
                    color_map={"best": "#f0ad4e", "other": "#5bc0de"}, elem_id="results-chart",
                )  # fmt: skip

        identity: list[Any] = [
            session,
            sign_in_box,
            account_row,
            who,
            admin_tab,
            chatbot,
            card_box,
            card_body,
            confirm_all,
        ]
        identity.append(note)
        tasks_out = [tasks_table, tasks_note]
        gpus_out = [gpus_table, gpus_chart, gpus_note]
        admin_out = [
            admin_summary, hours_chart, share_chart, waits_chart, energy_chart, cost_chart, offpeak_chart,
            quota_chart,
        ]  # fmt: skip

        def refresh_all(state: Any, chosen: str, window: float | None) -> tuple[Any, ...]:
            return (
                *handlers.tasks(state, chosen),
                *handlers.queue(state),
                *handlers.gpus(state),
                *handlers.admin(state, window),
            )

        everything = [*tasks_out, queue_table, queue_note, *gpus_out, *admin_out]
        refresh_inputs = [session, status, days]
        results_out = [results_note, results_table, results_chart, sort_metric, goal, chart_metric]
        # what one person looked up: cleared when someone signs in or out, so the next one never sees it
        personal = [log_id, log_view, estimate_out, sweep_id, results_tag, results_hint, *results_out]

        def clear_personal() -> tuple[Any, ...]:
            no_choices = gr.update(choices=[], value=None)
            return (
                None, "", "", None, "", "", "", views.results_frame({}), views.results_chart_frame({}, None),
                no_choices, GOAL_AUTO, no_choices,
            )  # fmt: skip

        # Who is signed in and what they looked up change in one update: once the page names the new
        # person, nothing of the last one is left, and nothing they type next is wiped by a late clear.
        def sign_in_afresh(typed: str, state: Any, request: gr.Request) -> tuple[Any, ...]:
            return (*handlers.sign_in(typed, state, request), "", *clear_personal())

        def sign_out_clearing(state: Any) -> tuple[Any, ...]:
            return (*handlers.sign_out(state), *clear_personal())

        demo.load(handlers.auto_sign_in, [session], identity).then(
            _when_signed_in(refresh_all, len(everything)), refresh_inputs, everything
        )
        for trigger in (sign_in.click, token.submit):
            trigger(sign_in_afresh, [token, session], [*identity, token, *personal]).then(
                refresh_all, refresh_inputs, everything
            )
        sign_out.click(sign_out_clearing, [session], [*identity, *personal]).then(
            refresh_all, refresh_inputs, everything
        )

        chat_out = [chatbot, text, card_box, card_body, confirm_all]
        # The message leaves the box in the browser, at once, so nothing typed after it is wiped by a late
        # answer; the reply is a second step that takes every message in turn ("multiple": Gradio's
        # default, "once", drops a message sent while the last reply still streams).
        gr.on([send.click, text.submit], None, [text], [sent, text, sent_number], js=NUMBER_THE_MESSAGE).then(
            handlers.chat, [sent, session, sent_number, turns], chat_out, trigger_mode="multiple"
        )
        confirm.click(handlers.confirm, [session], identity).then(
            handlers.tasks, [session, status], tasks_out
        )
        confirm_all.click(handlers.confirm_all, [session], identity).then(
            handlers.tasks, [session, status], tasks_out
        )
        drop.click(handlers.drop, [session], identity)

        tasks_tab.select(handlers.tasks, [session, status], tasks_out)
        for event in (
            refresh_tasks.click,
            status.change,
        ):  # asked for: the count again, not the last click's note
            event(handlers.refresh_tasks, [session, status], tasks_out)
        show_log.click(handlers.log_text, [session, log_id], log_view)
        hold.click(handlers.hold, [session, log_id, status], tasks_out)
        release.click(handlers.release, [session, log_id, status], tasks_out)
        set_priority.click(handlers.set_priority, [session, log_id, new_priority, status], tasks_out)
        tasks_table.select(handlers.select_task, [session, tasks_table], [log_id, log_view])
        for event in (queue_tab.select, refresh_queue.click):
            event(handlers.queue, [session], [queue_table, queue_note])
        what_if = [session, est_gpus, est_mem, est_minutes, est_tonight]
        estimate.click(handlers.estimate, what_if, estimate_out)
        for event in (gpus_tab.select, refresh_gpus.click):
            event(handlers.gpus, [session], gpus_out)
        for event in (admin_tab.select, refresh_admin.click):
            event(handlers.admin, [session, days], admin_out)

        results_tab.select(handlers.recent_sweeps, [session], results_hint)
        for event in (show_results.click, results_tag.submit):
            event(handlers.results, [session, sweep_id, results_tag], results_out)
        for event in (sort_metric.input, goal.input, chart_metric.input):
            event(
                handlers.results,
                [session, sweep_id, results_tag, sort_metric, goal, chart_metric],
                results_out,
            )
    demo.queue(default_concurrency_limit=8)
    blocks: gr.Blocks = demo
    return blocks
