"""Notifications: real deliveries to local webhook receivers in each format (one failing first, then
retried), to a local SMTP server, and from a worker's task events, quota checks and the morning summary."""

from __future__ import annotations

import pytest

from scheduler.notify.config import NotifyTarget
from scheduler.notify.events import Event
from scheduler.notify.jobs import ClusterJobs
from scheduler.notify.notifier import Notifier
from scheduler.policy.config import PolicyConfig
from tests.conftest import wait_until

EVENT = Event(
    "failure", "Task 7 (train) failed: nonzero_exit", "exit code 3", user="alice", team="vision",
    task_id=7, fields={"exit_code": 3}, log_tail=["epoch 3", "CUDA error: boom"],
)  # fmt: skip


@pytest.fixture
def notifiers():
    made: list[Notifier] = []

    def make(*targets: NotifyTarget, **kwargs) -> Notifier:
        notifier = Notifier(list(targets), **{"backoff_s": 0.01, **kwargs})
        made.append(notifier)
        return notifier

    yield make
    for notifier in made:
        notifier.close()


def test_each_webhook_format_is_delivered_in_its_shape(receiver, notifiers):
    hooks = {fmt: receiver() for fmt in ("slack", "feishu", "dingtalk", "json")}
    notifier = notifiers(*(NotifyTarget(url=hook.url, format=fmt) for fmt, hook in hooks.items()))

    assert notifier.notify(EVENT) == 4
    assert notifier.flush(10)

    slack = hooks["slack"].requests[0].body
    assert slack["text"].startswith("Task 7 (train) failed") and "CUDA error: boom" in slack["text"]
    assert slack["blocks"][0]["type"] == "section"
    feishu = hooks["feishu"].requests[0].body
    assert feishu["msg_type"] == "text" and "exit code 3" in feishu["content"]["text"]
    ding = hooks["dingtalk"].requests[0].body
    assert ding["msgtype"] == "markdown" and ding["markdown"]["title"] == EVENT.title
    plain = hooks["json"].requests[0].body
    assert (plain["event"], plain["task_id"], plain["log_tail"]) == (
        "failure",
        7,
        ["epoch 3", "CUDA error: boom"],
    )
    assert notifier.stats.delivered == 4


def test_a_receiver_failing_first_gets_the_message_on_a_retry(receiver, notifiers):
    hook = receiver(failures=2)
    notifier = notifiers(NotifyTarget(url=hook.url, format="slack"))
    notifier.notify(EVENT)
    assert notifier.flush(10)
    assert hook.attempts == 3 and len(hook.requests) == 1
    assert (notifier.stats.retried, notifier.stats.delivered) == (2, 1)


def test_feishu_and_dingtalk_errors_in_a_200_answer_are_retried_and_signed_bots_get_a_signature(
    receiver, notifiers
):
    feishu = receiver(failures=1, error_body={"code": 19021, "msg": "sign match fail"}, ok_body={"code": 0})
    ding = receiver(failures=1, error_body={"errcode": 310000, "errmsg": "sign not match"})
    notifier = notifiers(
        NotifyTarget(url=feishu.url, format="lark", secret="s3cret"),
        NotifyTarget(url=ding.url, format="dingtalk", secret="s3cret"),
    )
    notifier.notify(EVENT)
    assert notifier.flush(10)
    assert feishu.attempts == 2 and {"timestamp", "sign"} <= set(feishu.requests[0].body)
    assert ding.attempts == 2 and "timestamp=" in ding.requests[0].path and "sign=" in ding.requests[0].path


def test_a_receiver_that_never_answers_is_given_up_after_the_retries(receiver, notifiers):
    hook = receiver(failures=100)
    notifier = notifiers(NotifyTarget(url=hook.url), retries=2)
    notifier.notify(EVENT)
    assert notifier.flush(10)
    assert hook.attempts == 3 and notifier.stats.dropped == 1


def test_events_go_only_to_the_targets_of_their_user_team_and_kind(receiver, notifiers):
    mine, theirs, failures_only = receiver(), receiver(), receiver()
    notifier = notifiers(
        NotifyTarget(url=mine.url, user="alice"),
        NotifyTarget(url=theirs.url, team="nlp"),
        NotifyTarget(url=failures_only.url, team="vision", events=["failure"]),
    )
    assert notifier.notify(EVENT) == 2
    assert notifier.notify(Event("start", "Task 7 started", user="alice", team="vision")) == 1
    assert notifier.flush(10)
    assert (len(mine.requests), len(theirs.requests), len(failures_only.requests)) == (2, 0, 1)


def test_an_email_reaches_a_local_smtp_server(smtp_server, notifiers):
    from scheduler.notify.channels import SmtpConfig

    notifier = notifiers(
        NotifyTarget(email="alice@example.org", user="alice"),
        smtp=SmtpConfig(smtp_server.host, smtp_server.port, sender="gpus@example.org"),
    )
    notifier.notify(EVENT)
    assert notifier.flush(10)
    wait_until(lambda: smtp_server.messages)
    message = smtp_server.messages[0]
    assert message["To"] == "alice@example.org" and message["From"] == "gpus@example.org"
    assert message["Subject"] == "[nightshift] Task 7 (train) failed: nonzero_exit"
    assert "CUDA error: boom" in message.get_payload()


def test_a_workers_tasks_notify_start_success_and_failure_with_the_last_log_lines(
    cluster, make_identity, start_node, receiver, notifiers, tmp_path
):
    hook = receiver()
    notifier = notifiers(NotifyTarget(url=hook.url, team="vision"))
    who, _ = make_identity("alice", "vision")
    start_node(gpus="1x24", notifier=notifier)
    good = cluster.submit(who, {"command": "echo fine", "workdir": str(tmp_path), "name": "good"})[0]
    bad = cluster.submit(
        who, {"command": "echo step 1; echo 'RuntimeError: nan loss'; exit 3", "workdir": str(tmp_path)}
    )[0]
    for task in (good, bad):
        wait_until(lambda task=task: cluster.tasks.get_any(task.id).status in ("succeeded", "failed"))
    expected = {("start", good.id), ("success", good.id), ("start", bad.id), ("failure", bad.id)}
    wait_until(lambda: len(hook.requests) >= len(expected))  # the events follow the status change
    assert notifier.flush(10)
    assert {(r.body["event"], r.body["task_id"]) for r in hook.requests} == expected
    failure = next(r.body for r in hook.requests if r.body["event"] == "failure")
    assert "RuntimeError: nan loss" in failure["log_tail"]
    assert failure["fields"]["exit_code"] == 3 and "gpu_hours" in failure["fields"]


class _Collect:
    """A notifier that keeps what it is given."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.targets: list[NotifyTarget] = []

    def notify(self, event: Event) -> int:
        self.events.append(event)
        return 1


def test_a_team_warned_at_80_percent_is_told_again_when_its_budget_is_used_up(cluster, monkeypatch):
    share = {"now": 0.85}

    def use(factory, now_s, config, team=None):
        day = share["now"] * 10
        return [{"team": "vision", "day_used_gpu_h": day, "day_budget_gpu_h": 10.0, "day_share": share["now"],
                 "week_used_gpu_h": day, "week_budget_gpu_h": None, "week_share": None}]  # fmt: skip

    monkeypatch.setattr("scheduler.notify.jobs.quota_use", use)
    notifier = _Collect()
    jobs = ClusterJobs(cluster, notifier)  # type: ignore[arg-type]

    warned = jobs.check_quotas()
    again = jobs.check_quotas()
    share["now"] = 1.2
    used_up = jobs.check_quotas()
    still = jobs.check_quotas()

    assert [len(warned), len(again), len(used_up), len(still)] == [1, 0, 1, 0]
    assert "85%" in warned[0].title and "may wait" in warned[0].text
    assert "used up" in used_up[0].title
    assert "no new GPU task of team vision starts until its use ages out" in used_up[0].text
    assert "may wait behind other teams" not in used_up[0].text


def test_quota_warnings_go_to_the_team_once_and_the_summary_is_sent(
    cluster, make_identity, start_node, receiver, notifiers, tmp_path
):
    hook = receiver()
    notifier = notifiers(NotifyTarget(url=hook.url, team="vision"))
    who, _ = make_identity("alice", "vision")
    start_node(gpus="1x24")
    task = cluster.submit(who, {"command": "sleep 0.2", "workdir": str(tmp_path)})[0]
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "succeeded")
    cluster.policy_config = PolicyConfig(timezone="UTC", day_budget_gpu_h={"vision": 0.00001})
    jobs = ClusterJobs(cluster, notifier)

    warned = jobs.check_quotas()
    assert [event.kind for event in warned] == ["quota_warning"]
    assert jobs.check_quotas() == []  # once per window and day
    sent = jobs.send_summary()
    assert [event.team for event in sent] == ["vision"]
    assert jobs.send_summary() == []
    assert notifier.flush(10)
    kinds = [r.body["event"] for r in hook.requests]
    assert kinds == ["quota_warning", "summary"]
    assert "1 succeeded, 0 failed" in hook.requests[1].body["text"]


def test_a_requeued_task_tells_its_owner_it_is_back_in_the_queue(
    cluster, make_identity, start_node, receiver, notifiers, tmp_path
):
    hook = receiver()
    notifier = notifiers(NotifyTarget(url=hook.url, user="alice", events=["requeue"]))
    who, _ = make_identity("alice", "vision")
    root, _ = make_identity("root", "ops", admin=True)
    start_node(gpus="1x24", notifier=notifier)
    task = cluster.submit(who, {"command": "sleep 30", "workdir": str(tmp_path), "name": "train"})[0]
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "running")

    cluster.requeue(root, task.id)

    wait_until(lambda: hook.requests)
    assert notifier.flush(10)
    body = hook.requests[0].body
    assert (body["event"], body["task_id"], body["user"]) == ("requeue", task.id, "alice")
    assert body["title"] == f"Task {task.id} (train) is back in the queue"
    assert (
        body["text"] == "requeued by root: stopped and put back in the queue; it starts again when GPUs free"
    )
    cluster.cancel(who, task.id)
