"""Telemetry: GPU and host samples on an interval, attributed to tasks, kept as a downsampled SQL history,
and the per-attempt accounting (GPU-hours, energy, cost, peak memory, utilization) built from them."""
