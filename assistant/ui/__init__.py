"""The chat UI: a Gradio app mounted in the API service at `/ui` (one port, served by `nightshift up`).

Gradio's analytics and the Hugging Face hub's telemetry are switched off before Gradio is imported.
"""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from assistant.ui.mount import UI_PATH, mount_ui

__all__ = ["UI_PATH", "mount_ui"]
