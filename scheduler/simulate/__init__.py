"""`nightshift simulate`: replay a trace through the scheduling core on a virtual clock."""

from scheduler.simulate.metrics import SimulationResult
from scheduler.simulate.runner import parse_gpus_spec, run_simulation, simulate_jobs
from scheduler.simulate.trace import TraceError, TraceJob, read_trace

__all__ = [
    "SimulationResult",
    "TraceError",
    "TraceJob",
    "parse_gpus_spec",
    "read_trace",
    "run_simulation",
    "simulate_jobs",
]
