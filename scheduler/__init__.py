"""nightshift's domain: task specs, scheduling policy, queue, store, GPUs, executor and worker."""

__version__ = "0.1.0"
