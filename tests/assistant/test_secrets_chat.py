"""The chat gives a job one's own secrets by name ("with my WANDB_API_KEY", "用我的 HF_TOKEN"), never a value:
a card names them, one not set is refused before a card with the command that sets it, and "how do I give
my job my HF token?" explains secrets instead of refusing. What only the server knows (secrets, priority
limits) is asked of it (`POST /tasks/check`) before a card is shown."""

from __future__ import annotations

import pytest

from assistant.parsing.intents import understand
from tests.assistant.conftest import NOW

VALUE = "wandb_s3cr3t_value"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("run python train.py with my WANDB_API_KEY secret", ["WANDB_API_KEY"]),
        ("run python train.py with my wandb key", ["WANDB_API_KEY"]),
        ("run `python t.py` using my HF_TOKEN and WANDB_API_KEY", ["HF_TOKEN", "WANDB_API_KEY"]),
        ("用我的 HF_TOKEN 跑 python train.py", ["HF_TOKEN"]),
    ],
)
def test_a_secret_of_ones_own_for_the_job_is_named_not_refused(text, names):
    reading = understand(text, NOW)

    assert reading.tool == "submit_task" and reading.args["secrets"] == names


@pytest.mark.parametrize(
    "text", ["how do I give my job my HF token?", "where do I put my wandb key", "怎么把我的token给任务用"]
)
def test_how_to_give_a_job_a_key_is_explained(text, make_assistant):
    turn = make_assistant().ask(text)

    assert understand(text, NOW).reason == "secrets"
    assert turn.cards == [] and "nightshift secret set WANDB_API_KEY" in turn.reply


@pytest.mark.parametrize("text", ["show me alice's token", "show me my HF_TOKEN", "give me an admin token"])
def test_a_value_or_someone_elses_token_is_still_refused(text):
    assert understand(text, NOW).reason == "privilege"


def test_a_card_names_the_secret_only_once_it_is_set_and_the_job_gets_it_by_name(cluster, make_assistant):
    assistant = make_assistant("alice", "vision")
    unset = assistant.ask("run python train.py with my WANDB_API_KEY")
    cluster.secrets.put("alice", "WANDB_API_KEY", VALUE)
    turn = assistant.ask("run python train.py with my WANDB_API_KEY")
    [card] = turn.cards
    result = assistant.confirm(card["action_id"])

    assert unset.cards == []
    assert (
        "you have no secret WANDB_API_KEY: store it with `nightshift secret set WANDB_API_KEY`" in unset.reply
    )
    assert card["spec"]["secrets"] == ["WANDB_API_KEY"] and "your secret WANDB_API_KEY" in turn.reply
    assert "--secret WANDB_API_KEY" in card["summary"]["cli"]
    assert VALUE not in str(card) + turn.reply
    assert result["ok"] is True
    assert cluster.tasks.get_any(result["task"]["id"]).spec["secrets"] == ["WANDB_API_KEY"]


def test_what_only_the_server_knows_is_checked_before_a_card(cluster, make_assistant, monkeypatch):
    monkeypatch.setattr(
        cluster, "settings", cluster.settings.model_copy(update={"priority_limits": {"urgent": 1}})
    )
    assistant = make_assistant("alice", "vision")
    first = assistant.ask("run python a.py, it's urgent")
    assistant.confirm(first.cards[0]["action_id"])
    second = assistant.ask("run python b.py, it's urgent")

    assert second.cards == []
    assert (
        "alice has 1 urgent task queued or running" in second.reply and "at most 1 per person" in second.reply
    )


def test_a_change_past_a_priority_limit_is_refused_before_its_card(cluster, make_assistant, monkeypatch):
    monkeypatch.setattr(
        cluster, "settings", cluster.settings.model_copy(update={"priority_limits": {"urgent": 1}})
    )
    assistant = make_assistant("alice", "vision")
    for text in ("run python a.py, it's urgent", "run python b.py"):
        assistant.confirm(assistant.ask(text).cards[0]["action_id"])
    normal = max(task.id for task in cluster.tasks.with_status("queued"))
    turn = assistant.ask(f"make {normal} urgent")

    assert turn.cards == [] and "alice has 1 urgent task queued or running" in turn.reply
    assert cluster.tasks.get_any(normal).priority == "normal"


def test_a_sweeps_change_past_a_priority_limit_is_refused_before_its_card(
    cluster, make_assistant, monkeypatch
):
    monkeypatch.setattr(
        cluster, "settings", cluster.settings.model_copy(update={"priority_limits": {"urgent": 2}})
    )
    assistant = make_assistant("alice", "vision")
    sweep = assistant.client.submit_sweep(
        {"command": "python t.py --x {x}", "gpus": 0, "sweep": {"x": [1, 2, 3]}}
    )
    turn = assistant.ask(f"make sweep {sweep['id']} urgent")

    assert turn.cards == []
    assert "alice has 0 urgent tasks queued or running and this would add 3" in turn.reply
    assert {task.priority for task in cluster.tasks.with_status("queued")} == {"normal"}
