"""The scheduling policy: pure functions of (queued tasks, running tasks, GPUs, now) -> decisions.

No Redis, no SQL, no clock reads here: the live scheduler and `nightshift simulate` call the same code.
"""
