"""The zone the CLI reads and shows times in: the cluster's, so `--after 23:00` and `ls` mean the same
hour as the chat and the off-peak window, wherever the CLI runs."""

from __future__ import annotations

from datetime import tzinfo
from functools import lru_cache

from api.client import NightshiftClient
from scheduler.clock import local_zone
from scheduler.errors import SpecError
from scheduler.settings import Settings


def cli_zone(settings: Settings) -> tzinfo:
    """`NIGHTSHIFT_TIMEZONE` when this shell sets one, else the zone the API reports (`in_cluster_zone`);
    this machine's when neither says, or when the API names a zone this machine does not know."""
    try:
        return local_zone(in_cluster_zone(settings).timezone)
    except SpecError:
        if settings.timezone:
            raise  # a typo in this shell's own setting is the person's to fix
        return local_zone("")


def in_cluster_zone(settings: Settings) -> Settings:
    """`settings` with the zone the API reports when they name none: the chat served apart and `nightshift
    ask` read "tonight" and "9am" where the GPUs are, as the chat at the API's own /ui does."""
    reported = None if settings.timezone else reported_zone_name(settings.api_url)
    return settings.model_copy(update={"timezone": reported}) if reported else settings


@lru_cache(maxsize=4)
def reported_zone_name(api_url: str) -> str | None:
    """The cluster's zone as its API reports it, asked once per process and API."""
    client = NightshiftClient(api_url, None, timeout_s=5.0)
    try:
        return client.cluster_zone_name()
    finally:
        client.close()
