"""Fixtures for the GPU inventory tests: recorded NVML answers, replayed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .nvml_replay import ReplayNvml


@pytest.fixture
def recorded_nvml() -> Callable[[str], ReplayNvml]:
    """Factory: `recorded_nvml("a100_sxm4_80gb_x8")` -> a pynvml stand-in answering from that recording."""
    return ReplayNvml.load
