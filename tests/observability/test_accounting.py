"""Per-task accounting: GPU-hours, energy integrated from measured power (estimated without it), cost
split at a tariff boundary, peak memory next to the request, mean utilization; shown on GET /tasks/{id}."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from assistant.agent import Assistant
from assistant.client import AssistantClient
from scheduler.gpus.inventory import GpuInfo
from scheduler.policy.reasons import amount
from scheduler.policy.tariff import DEFAULT_TARIFF, estimate_cost, gpu_power_w
from scheduler.policy.windows import parse_windows
from scheduler.telemetry.accounting import UsageMeter, offpeak_seconds
from tests.assistant.conftest import AppTransport, new_endpoints
from tests.conftest import wait_until

# A Wednesday: the default tariff charges 0.15/kWh before 07:00 and 0.30/kWh from 07:00 (UTC here).
SIX_THIRTY = datetime(2026, 3, 4, 6, 30, tzinfo=UTC).timestamp()


def _gpu(index: int, power_w: float | None, util: float = 80.0, used_mib: int = 1000, name: str = "A100"):
    return GpuInfo(index, f"g{index}", name, 81920, used_mib, 81920 - used_mib, util, 60.0, power_w, 400.0)


def test_energy_and_cost_of_a_task_spanning_a_tariff_boundary_are_split_at_the_boundary():
    # Given a task on 2 GPUs drawing 250 W each from 06:30 to 07:30, sampled every minute
    meter = UsageMeter("n", DEFAULT_TARIFF, parse_windows("23:00-07:00"), "UTC")
    meter.begin(1, 1, [0, 1], SIX_THIRTY, requested_memory_mib=10240)
    for minute in range(1, 61):
        meter.observe(SIX_THIRTY + 60 * minute, [_gpu(0, 250.0, used_mib=2000 + minute), _gpu(1, 250.0)])
    usage = meter.end(1, SIX_THIRTY + 3600)
    assert usage is not None

    # Then 2 GPU-hours, 0.5 kWh measured, half of it off-peak, each half at its own price
    assert usage.gpu_hours == pytest.approx(2.0)
    assert usage.energy_kwh == pytest.approx(0.5)
    assert usage.energy_source == "measured"
    assert usage.offpeak_energy_kwh == pytest.approx(0.25)
    assert usage.cost == pytest.approx(0.25 * 0.15 + 0.25 * 0.30)
    assert (usage.peak_memory_mib, usage.requested_memory_mib) == (2060, 10240)
    assert usage.mean_utilization_pct == pytest.approx(80.0)


def test_without_a_power_reading_energy_is_estimated_from_the_gpu_model():
    meter = UsageMeter("n", DEFAULT_TARIFF, (), "UTC")
    meter.begin(2, 1, [0], SIX_THIRTY)
    meter.observe(SIX_THIRTY + 1800, [_gpu(0, None, name="NVIDIA A100-SXM4-80GB")])
    usage = meter.end(2, SIX_THIRTY + 3600)
    assert usage is not None and usage.energy_source == "estimated"
    assert usage.energy_kwh == pytest.approx(0.4)  # the A100's 400 W for one hour
    assert usage.cost == pytest.approx(0.2 * 0.15 + 0.2 * 0.30)


def test_a_gpu_shared_by_two_tasks_gives_each_half_its_power():
    meter = UsageMeter("n", DEFAULT_TARIFF, (), "UTC")
    meter.begin(1, 1, [0], SIX_THIRTY)
    meter.begin(2, 1, [0], SIX_THIRTY)
    for tenth in range(1, 7):
        meter.observe(SIX_THIRTY + 600 * tenth, [_gpu(0, 300.0)])
    first, second = meter.end(1, SIX_THIRTY + 3600), meter.end(2, SIX_THIRTY + 3600)
    assert first is not None and second is not None
    assert first.energy_kwh == pytest.approx(0.15) == second.energy_kwh


def test_memory_in_use_before_a_task_started_is_not_in_its_peak():
    # a notebook outside nightshift holds 100 GiB of GPU 0 when the task starts; the task adds 15 GiB
    meter = UsageMeter("n", DEFAULT_TARIFF, (), "UTC")
    meter.begin(1, 1, [0], SIX_THIRTY, requested_memory_mib=20_480, used_before_mib={0: 102_400})
    meter.observe(SIX_THIRTY + 60, [_gpu(0, 300.0, used_mib=102_400 + 15_360)])
    meter.observe(SIX_THIRTY + 120, [_gpu(0, 300.0, used_mib=102_400 + 9_000)])
    usage = meter.end(1, SIX_THIRTY + 180)
    assert usage is not None and usage.peak_memory_mib == 15_360


def test_offpeak_seconds_counts_windows_across_midnight():
    windows = parse_windows("23:00-07:00")
    evening = datetime(2026, 3, 4, 22, 0, tzinfo=UTC).timestamp()
    assert offpeak_seconds(evening, evening + 10 * 3600, windows, "UTC") == 8 * 3600


def _an_hour_at_300_w(cluster, who, start_node, tmp_path: Path):
    """A task asking for 8 GB that runs on one simulated GPU from 06:30 to 07:30 by the agent's clock,
    drawing 300 W at 95 % and holding 6000 MiB; once it has ended."""
    node = start_node(gpus="2x24", start_s=SIX_THIRTY)
    done = tmp_path / "done"
    spec = {
        "command": f"while [ ! -f {done} ]; do sleep 0.05; done",
        "gpu_memory_gb": 8,
        "workdir": str(tmp_path),
    }
    task = cluster.submit(who, spec)[0]
    wait_until(lambda: task.id in node.worker.gpu_holders())
    gpu = node.worker.gpu_holders()[task.id][0]
    node.gpus.set_reading(gpu, power_w=300.0, utilization_pct=95, memory_used_mib=6000)
    for _ in range(60):
        node.telemetry.sample_once(node.clock.advance(60))
    node.gpus.set_reading(gpu, memory_used_mib=0)
    done.touch()
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "succeeded")
    return task


def test_a_finished_task_shows_its_usage_on_get(cluster, make_identity, start_node, tmp_path: Path):
    # Given a task that ran on one simulated GPU from 06:30 to 07:30 by the agent's clock
    who, token = make_identity("alice", "vision")
    task = _an_hour_at_300_w(cluster, who, start_node, tmp_path)

    # Then GET /tasks/{id} carries its GPU-hours, measured energy, split cost, peak vs requested memory
    client = TestClient(create_app(cluster))
    body = client.get(f"/api/v1/tasks/{task.id}", headers={"Authorization": f"Bearer {token}"}).json()
    usage = body["usage"]
    assert usage["gpu_hours"] == pytest.approx(1.0)
    assert usage["energy_kwh"] == pytest.approx(0.3)
    assert usage["energy_source"] == "measured"
    assert usage["cost"] == pytest.approx(0.15 * 0.15 + 0.15 * 0.30)
    assert usage["offpeak_share"] == pytest.approx(0.5)
    assert (usage["peak_gpu_memory_mib"], usage["requested_gpu_memory_mib"]) == (6000, 8192)
    assert usage["mean_utilization_pct"] == pytest.approx(95.0)
    # And the list carries the same usage (one query for the page); a task that never ran has none
    never, _ = cluster.submit(
        who, {"command": "true", "workdir": str(tmp_path), "not_before": "2030-01-01T00:00"}
    )
    listed = client.get("/api/v1/tasks", headers={"Authorization": f"Bearer {token}"}).json()["tasks"]
    by_id = {row["id"]: row for row in listed}
    assert by_id[task.id]["usage"] == usage
    assert by_id[never.id]["usage"] is None


def test_a_finished_tasks_usage_has_its_cpu_time_where_jobs_run_in_cgroups(
    cluster, make_identity, start_node, tmp_path: Path, job_cgroups
):
    who, token = make_identity("alice", "vision")
    start_node(gpus="1x24", start_s=SIX_THIRTY)
    burn = "import time\nstart = time.process_time()\nwhile time.process_time() - start < 0.5: pass"
    task = cluster.submit(who, {"command": f"python3 -c '{burn}'", "workdir": str(tmp_path)})[0]
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "succeeded")

    client = TestClient(create_app(cluster))
    body = client.get(f"/api/v1/tasks/{task.id}", headers={"Authorization": f"Bearer {token}"}).json()
    assert 0.45 <= body["usage"]["cpu_hours"] * 3600 < 5.0


def test_the_chat_says_what_a_finished_task_used_and_cost(cluster, make_identity, start_node, tmp_path: Path):
    # Given alice's task ran on one GPU for an hour at 300 W (measured) from 06:30, asking for 8 GB
    who, token = make_identity("alice", "vision")
    task = _an_hour_at_300_w(cluster, who, start_node, tmp_path)

    # When she asks the chat what it cost, in English and in Chinese
    with TestClient(create_app(cluster)) as api:
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, user="alice", team="vision")
        english = assistant.ask(f"what did task {task.id} cost?").reply
        chinese = assistant.ask(f"{task.id}号任务花了多少钱").reply
        client.close()

    # Then the answer gives its GPU-hours, measured energy, cost (split at 07:00) and peak memory
    cost = f"{0.15 * 0.15 + 0.15 * 0.30:.2f} {DEFAULT_TARIFF.currency}"
    assert f"Task #{task.id} succeeded." in english, english
    assert f"It used 1.00 GPU-hours and 0.30 kWh (measured), costing {cost}" in english, english
    assert "peak GPU memory 5.9 GB of the 8 GB asked." in english, english
    assert f"共用 1.00 GPU小时、0.30 kWh（实测），费用 {cost}" in chinese, chinese
    assert "显存峰值 5.9 GB（申请 8 GB）" in chinese, chinese


def test_a_task_sharing_its_gpu_is_charged_its_part_of_the_gpu_hours_and_of_the_estimated_power():
    # Given a half-GPU task on an A100 for an hour, with no power reading
    meter = UsageMeter("n", DEFAULT_TARIFF, (), "UTC")
    meter.begin(3, 1, [0], SIX_THIRTY, gpu_fraction=0.5)
    meter.observe(SIX_THIRTY + 1800, [_gpu(0, None, name="NVIDIA A100-SXM4-80GB")])
    usage = meter.end(3, SIX_THIRTY + 3600)

    # Then half a GPU-hour, and half the A100's 400 W
    assert usage is not None and usage.energy_source == "estimated"
    assert usage.gpu_hours == pytest.approx(0.5)
    assert usage.energy_kwh == pytest.approx(0.2)


def test_the_chat_and_explain_say_what_a_queued_task_should_cost(
    cluster, make_identity, start_node, tmp_path
):
    # Given alice's 2-GPU task of 90 min that may not start before 06:00 on a Wednesday (cheap until 07:00)
    who, token = make_identity("alice", "vision")
    start_node(gpus="2x24")
    spec = {"command": "true", "gpus": 2, "estimated_minutes": 90, "not_before": "2030-01-09T06:00:00+00:00"}
    task, _ = cluster.submit(who, {**spec, "workdir": str(tmp_path)})

    # When she asks what it will cost, through the API and the chat
    with TestClient(create_app(cluster)) as api:
        explained = api.get(f"/api/v1/tasks/{task.id}/explain", headers={"Authorization": f"Bearer {token}"})
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, user="alice", team="vision")
        english = assistant.ask(f"what will task {task.id} cost?").reply
        chinese = assistant.ask(f"{task.id}号任务要花多少钱").reply
        why = assistant.ask(f"why isn't task {task.id} running?").reply
        client.close()

    # Then its energy is its GPUs' typical draw for its estimate, priced from 06:00: 1 h cheap, 30 min not
    body = explained.json()
    power = gpu_power_w(cluster.nodes.all()[0].gpus[0].name, None, cluster.policy_config.gpu_power_w)
    kwh = 2 * power * 5400 / 3.6e6
    start = datetime(2030, 1, 9, 6, tzinfo=UTC).timestamp()
    cost = estimate_cost(start, start + 5400, kwh, DEFAULT_TARIFF)
    assert cost == pytest.approx(kwh * (2 / 3 * 0.15 + 1 / 3 * 0.30))
    assert (body["energy_kwh"], body["energy_cost"]) == (round(kwh, 3), round(cost, 2))
    said = f"it should use ~{amount(kwh, 1)} kWh and cost ~{amount(round(cost, 2), 2)} {DEFAULT_TARIFF.currency}."
    assert f"Run as estimated (90 min), {said}" in english, english
    assert f"按预估运行（90 分钟），预计耗电约 {amount(kwh, 1)} kWh" in chinese, chinese
    assert "kWh" not in why, why  # said when asked, not in every answer about the task


def test_the_chat_says_what_a_running_task_should_cost_in_all(cluster, make_identity, start_node, tmp_path):
    # Given alice's 1-GPU task of 90 min (by her estimate), running
    who, token = make_identity("alice", "vision")
    start_node(gpus="1x24")
    flag = tmp_path / "done"
    spec = {"command": f"while [ ! -f {flag} ]; do sleep 0.05; done", "estimated_minutes": 90}
    task, _ = cluster.submit(who, {**spec, "workdir": str(tmp_path)})
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "running")

    # When she asks what it will cost
    try:
        with TestClient(create_app(cluster)) as api:
            headers = {"Authorization": f"Bearer {token}"}
            explained = api.get(f"/api/v1/tasks/{task.id}/explain", headers=headers).json()
            started = api.get(f"/api/v1/tasks/{task.id}", headers=headers).json()["started_at"]
            client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
            assistant = Assistant(cluster.settings, client, user="alice", team="vision")
            english = assistant.ask(f"how much will task {task.id} cost?").reply
            client.close()
    finally:
        flag.touch()

    # Then its energy and cost run from its start to its expected end, 90 min later
    power = gpu_power_w(cluster.nodes.all()[0].gpus[0].name, None, cluster.policy_config.gpu_power_w)
    kwh = power * 5400 / 3.6e6
    start = datetime.fromisoformat(started).timestamp()
    cost = round(estimate_cost(start, start + 5400, kwh, DEFAULT_TARIFF), 2)
    assert (explained["energy_kwh"], explained["energy_cost"]) == (round(kwh, 3), cost)
    said = (
        f"it should use ~{amount(kwh, 1)} kWh and cost ~{amount(cost, 2)} {DEFAULT_TARIFF.currency} in all."
    )
    assert f"Run to its expected end, {said}" in english, english


def test_the_chat_prices_a_task_not_yet_sent_and_one_it_is_asked_to_wait_for(
    cluster, make_identity, start_node, tmp_path
):
    # Given alice on a 2-GPU node, with a queued 1-GPU task of 90 min that may start only in 6 hours (not the
    # off-peak window, which it would be inside of when the test runs at night)
    who, token = make_identity("alice", "vision")
    start_node(gpus="2x24")
    later = (datetime.now(UTC) + timedelta(hours=6)).isoformat()
    spec = {"command": "true", "estimated_minutes": 90, "not_before": later, "workdir": str(tmp_path)}
    task, _ = cluster.submit(who, spec)
    headers = {"Authorization": f"Bearer {token}"}
    sized = "/api/v1/estimate?gpus=2&estimated_minutes=180&offpeak=true"

    # When she asks what 2 GPUs for 3 hours would cost tonight, in English and Chinese, and how long her
    # task waits and what it will cost
    with TestClient(create_app(cluster)) as api:
        before = [
            api.get(path, headers=headers).json() for path in (sized, f"/api/v1/estimate?task_id={task.id}")
        ]
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, user="alice", team="vision")
        english = assistant.ask("what would 2 GPUs for 3 hours cost tonight?").reply
        chinese = assistant.ask("今晚两张卡跑三个小时要多少钱").reply
        waits = assistant.ask(f"how long will task {task.id} wait and what will it cost?").reply
        client.close()
        after = [
            api.get(path, headers=headers).json() for path in (sized, f"/api/v1/estimate?task_id={task.id}")
        ]

    # Then each answer says when it would start and what GET /estimate prices it at (read just before or
    # just after, in case a tariff hour turned between)
    def said(estimate: dict, minutes: int) -> str:
        kwh, cost = amount(estimate["energy_kwh"], 1), amount(estimate["energy_cost"], 2)
        return f"Run as estimated ({minutes} min), it should use ~{kwh} kWh and cost ~{cost} EUR."

    assert any(said(e[0], 180) in english for e in (before, after)), (english, before[0])
    assert "A 2-GPU task: Estimated start" in english or "A 2-GPU task would start now" in english, english
    assert any(f"预计耗电约 {amount(e[0]['energy_kwh'], 1)} kWh" in chinese for e in (before, after)), chinese
    assert any(said(e[1], 90) in waits for e in (before, after)), (waits, before[1])
    assert waits.startswith(f"#{task.id} Estimated start"), waits
