"""The zone the CLI reads and shows times in: the cluster's, so `--after 23:00` and `ls` mean the same
hour as the chat and the off-peak window, wherever the CLI runs."""

from __future__ import annotations

from datetime import tzinfo
from functools import lru_cache

from api.client import NightshiftClient
from scheduler.clock import local_zone
from scheduler.errors import SpecError
from scheduler.settings import Settings


def cluster_zone_name(settings: Settings) -> str | None:
    """`NIGHTSHIFT_TIMEZONE` when this shell sets one, else the zone the API reports; None when neither
    says (the API cannot be reached or is older)."""
    return settings.timezone or reported_zone_name(settings.api_url)


def cli_zone(settings: Settings) -> tzinfo:
    """The cluster's zone (`cluster_zone_name`); this machine's when none is known, or when the API names
    a zone this machine does not know."""
    try:
        return local_zone(cluster_zone_name(settings) or "")
    except SpecError:
        if settings.timezone:
            raise  # a typo in this shell's own setting is the person's to fix
        return local_zone("")


@lru_cache(maxsize=4)
def reported_zone_name(api_url: str) -> str | None:
    """The cluster's zone as its API reports it, asked once per process and API."""
    client = NightshiftClient(api_url, None, timeout_s=5.0)
    try:
        return client.cluster_zone_name()
    finally:
        client.close()
