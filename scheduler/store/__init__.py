"""Persistence: SQL tables (the source of truth) and the Redis queue (a rebuildable index)."""
