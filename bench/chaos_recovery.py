"""Chaos recovery time: API, scheduler and two workers as processes; kill -9 a worker, FLUSHALL Redis,
kill -9 the scheduler and restart it (and the worker). Prints one JSON line with the seconds from the
first fault until every task settled (each task succeeded exactly once, or the script fails).

The scenario is `tests/reliability/test_chaos.py`'s; the lease TTL there is 3 s.

Usage: python bench/chaos_recovery.py [--tasks 8]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler.redis_server import EmbeddedRedis
from tests.reliability.stack import Stack
from tests.reliability.test_chaos import run_chaos


def main() -> None:
    """Run the chaos scenario once in a temp folder with its own redis-server; print the result as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = EmbeddedRedis(Path(folder) / "redis", appendonly=False).start()
        (Path(folder) / "cluster").mkdir()
        stack = Stack(Path(folder) / "cluster", server.url)
        try:
            result = run_chaos(stack, server.url, tasks=args.tasks)
        finally:
            stack.close()
            server.stop()
    print(json.dumps({"bench": "chaos_recovery", **result}))


if __name__ == "__main__":
    main()
