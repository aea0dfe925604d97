"""Asked who uses the GPUs, the chat names processes outside the queue (a notebook) with their memory and
owner (and, for an admin, command); owner and command reach the model as data, never as instructions."""

from __future__ import annotations

from scheduler.clock import now_ms
from scheduler.gpus.outside import OutsideProcess
from scheduler.nodes import NodeGpu
from tests.assistant.conftest import tool_result

GB = 1024


def _shared_gpu_box(cluster) -> None:
    """A node whose GPU 0 holds a notebook of alice's (100 GB), published as its worker would."""
    notebook = OutsideProcess(4242, 100 * GB, "alice", "jupyter-lab --port `8888`")
    gpus = [NodeGpu(0, "NVIDIA H200", 140 * GB, 40 * GB, outside=(notebook,), outside_mib=100 * GB)]
    cluster.nodes.publish("gpu-box", gpus, now_ms(), "nvml")


def test_who_uses_the_gpus_names_the_notebook_outside_the_queue(make_assistant, cluster):
    _shared_gpu_box(cluster)
    assistant = make_assistant("root", "ops", admin=True)

    turn = assistant.ask("who is using the gpus?")

    assert turn.tool_calls == [{"name": "cluster_status", "args": {}}]
    assert (
        "GPU 0 of gpu-box: 100 GB held outside the queue by pid 4242 of alice (`jupyter-lab --port '8888'`)."
        in (turn.reply)
    )
    [gpu] = tool_result(assistant.history, "cluster_status")["gpus"]
    assert gpu["outside"] == [
        {
            "pid": 4242,
            "user": "<data>alice</data>",
            "command": "<data>jupyter-lab --port `8888`</data>",
            "used_gb": 100.0,
        }
    ]


def test_in_chinese_the_notebook_is_named_in_chinese(make_assistant, cluster):
    _shared_gpu_box(cluster)

    turn = make_assistant("root", "ops", admin=True).ask("谁在用卡")

    assert (
        "gpu-box 的 0 号卡：100 GB 被队列以外的进程占用（alice 的进程 4242：`jupyter-lab --port '8888'`）。"
        in turn.reply
    )


def test_to_someone_who_is_no_admin_the_notebooks_command_is_not_shown(make_assistant, cluster):
    _shared_gpu_box(cluster)

    turn = make_assistant().ask("who is using the gpus?")

    assert "GPU 0 of gpu-box: 100 GB held outside the queue by pid 4242 of alice." in turn.reply
    assert "jupyter" not in turn.reply
