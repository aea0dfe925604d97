"""Small simulations whose answers can be worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.simulate import run_simulation

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
