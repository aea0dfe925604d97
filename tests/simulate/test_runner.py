"""Small simulations whose answers can be worked out by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from scheduler.policy.config import PolicyConfig
from scheduler.simulate import run_simulation, simulate_jobs
from scheduler.simulate.trace import TraceJob

TRACE = """job_id,submit_time_s,duration_s,num_gpus,team
a,0,100,2,x
b,0,50,1,y
c,10,10,1,y
d,20,100,4,x
"""
KEYS = [
    "policy",
    "jobs",
    "gpus",
    "mean_jct_s",
    "mean_wait_s",
    "p50_wait_s",
    "p95_wait_s",
    "p99_wait_s",
    "max_wait_s",
    "makespan_s",
    "utilization",
    "lower_bound_mean_jct_s",
    "per_team",
    "energy_kwh",
    "energy_cost",
    "wall_s",
]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    p = tmp_path / "trace.csv"
    p.write_text(TRACE)
    return p


def test_fifo_on_one_node_of_two_gpus_gives_known_waits(trace: Path) -> None:
    # a (2 GPUs) runs on one node 0-100; b 0-50 and c 10-20 on the other; d needs 4 GPUs, more than a
    # 2-GPU node: it takes both whole nodes (gang), once a ends at 100.
    r = run_simulation(trace, "2x24", 2, "fifo", oracle=True)
    d = r.to_dict()
    assert list(d) == KEYS
    assert r.starts_s == {0: 0.0, 1: 0.0, 2: 10.0, 3: 100.0}
    assert d["max_wait_s"] == 80.0 and d["makespan_s"] == 200.0
    assert d["mean_jct_s"] == pytest.approx((100 + 50 + 10 + 180) / 4)
    assert d["lower_bound_mean_jct_s"] == pytest.approx(65.0)
    assert d["utilization"] == pytest.approx((200 + 50 + 10 + 400) / (4 * 200))
    assert d["per_team"]["y"]["jobs"] == 2
    assert d["energy_kwh"] == pytest.approx(660 * 300 / 3.6e6, abs=0.01)


def test_backfill_lets_a_short_job_run_in_a_gap_without_delaying_the_reserved_one(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("submit_time_s,duration_s,num_gpus\n0,100,1\n1,100,2\n2,50,1\n")
    fifo = run_simulation(p, "2x24", 1, "fifo", oracle=True)
    easy = run_simulation(p, "2x24", 1, "backfill", oracle=True)
    assert fifo.starts_s == {0: 0.0, 1: 100.0, 2: 200.0}
    assert easy.starts_s == {0: 0.0, 1: 100.0, 2: 2.0}


def test_without_oracle_the_policy_learns_run_times_from_finished_jobs(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("submit_time_s,duration_s,num_gpus,user\n0,10,1,u\n20,10,1,u\n")
    r = run_simulation(p, "1x24", 1, "nightshift", oracle=False)
    assert r.starts_s == {0: 0.0, 1: 20.0} and r.to_dict()["jobs"] == 2


def test_an_unknown_policy_is_refused(trace: Path) -> None:
    with pytest.raises(Exception, match="unknown policy 'sjf'"):
        run_simulation(trace, "2x24", 1, "sjf", oracle=False)


def _wide_job_behind_a_stream_of_short_ones(tmp_path: Path) -> Path:
    """2 GPUs kept full by 10-s one-GPU jobs (two every 10 s for 2,000 s) and one 2-GPU job of unknown
    run time submitted at 1 s, which short-job credit ranks behind every one of them; all of one person
    (another person, who ran nothing, would go ahead by fair share within the team)."""
    rows = ["submit_time_s,duration_s,num_gpus,user"]
    rows += [f"{t},10,1,stream" for t in range(0, 2000, 10) for _ in range(2)]
    rows.append("1,10,2,stream")
    p = tmp_path / "stream.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def test_where_tasks_are_short_the_oldest_wide_task_goes_first_after_fifty_of_their_run_times(
    tmp_path: Path,
) -> None:
    # Given a wide job behind a stream of 10-s jobs
    trace = _wide_job_behind_a_stream_of_short_ones(tmp_path)
    wide = 400
    config = PolicyConfig()
    # When the typical run time (10 s) is observed, Then it goes first after 50 of them (500 s), long
    # before the 15-min setting, and starts once its reservation drains (within one more run)
    observed = run_simulation(trace, "2x24", 1, "nightshift", False, config)
    assert 1 + 50 * 10 <= observed.starts_s[wide] <= 1 + 50 * 10 + 20
    # And where run times are not taken into account, the 15-min setting alone decides
    setting_only = run_simulation(
        trace, "2x24", 1, "nightshift", False, replace(config, oldest_first_after_runs=1e9)
    )
    assert (
        1 + config.oldest_first_after_s <= setting_only.starts_s[wide] <= 1 + config.oldest_first_after_s + 20
    )


def test_a_job_held_by_its_teams_used_up_budget_starts_when_the_budget_frees() -> None:
    # nlp uses 8 GPU-h in its first 2 hours; its day budget is 4; nothing else happens after that
    jobs = [TraceJob(0, "a", 0.0, 7200.0, 4, "nlp"), TraceJob(1, "b", 3600.0, 600.0, 1, "nlp")]
    config = PolicyConfig(day_budget_gpu_h={"nlp": 4.0})

    result = simulate_jobs(jobs, "8x24", 1, "nightshift", config=config)

    # it starts once half of the first job's work has left the last 24 h (as the live scheduler would)
    assert result.starts_s[1] == pytest.approx(86400.0 + 3600.0, abs=2.0)
    assert result.jobs == 2 and len(result.starts_s) == 2


def test_jobs_that_could_never_fit_the_cluster_are_left_out_and_counted(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text(
        "job_id,submit_time_s,duration_s,num_gpus,gpu_mem_gb\n"
        "huge,0,100,9,\nok,5,100,1,\nfat,6,100,1,40\nfits_two_nodes,7,100,8,\n"
    )
    one_node = run_simulation(p, "4x24", 1, "fifo", oracle=True).to_dict()
    two_nodes = run_simulation(p, "4x24", 2, "fifo", oracle=True).to_dict()
    suggested = run_simulation(p, "4x40", 3, "fifo", oracle=True).to_dict()

    assert list(one_node) == [*KEYS, "left_out"]
    assert one_node["jobs"] == 1 and one_node["mean_jct_s"] == 100.0 and one_node["makespan_s"] == 100.0
    assert one_node["left_out"] == {
        "count": 3,
        "jobs": [
            {"job_id": "huge", "why": "needs 9 GPUs, the cluster has 4"},
            {"job_id": "fat", "why": "needs 40 GB per GPU, the largest GPU has 24 GB"},
            {"job_id": "fits_two_nodes", "why": "needs 8 GPUs, the cluster has 4"},
        ],
        "would_fit": "--gpus 4x40 --nodes 3",
    }
    assert two_nodes["jobs"] == 2 and two_nodes["left_out"]["count"] == 2  # 8 GPUs: both nodes whole
    assert suggested["jobs"] == 4 and list(suggested) == KEYS  # nothing left out: the brief's keys only


def test_a_trace_naming_several_people_of_a_team_gets_metrics_per_person() -> None:
    jobs = [
        TraceJob(0, "a", 0.0, 600.0, 1, "lab", "alice"),
        TraceJob(1, "b", 0.0, 600.0, 1, "lab", "alice"),
        TraceJob(2, "c", 60.0, 600.0, 1, "lab", "bob"),
    ]
    one_each = [TraceJob(0, "a", 0.0, 600.0, 1, "lab", "lab"), TraceJob(1, "b", 0.0, 60.0, 1, "cv", "cv")]

    result = simulate_jobs(jobs, "1x24", 1, "nightshift").to_dict()

    assert set(result["per_user"]) == {"alice", "bob"}
    assert result["per_user"]["alice"]["jobs"] == 2 and result["per_user"]["bob"]["jobs"] == 1
    assert (
        "per_user" not in simulate_jobs(one_each, "1x24", 1, "nightshift").to_dict()
    )  # each team one person
