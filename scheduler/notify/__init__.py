"""Notifications: task events, quota and idle warnings, the morning summary, to webhooks and e-mail."""
