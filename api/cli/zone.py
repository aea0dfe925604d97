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


def reported_zone_name(api_url: str) -> str | None:
    """The cluster's zone as its API reports it, asked once per process and API; an API that did not
    answer is asked again next time, rather than its times read in this machine's zone from then on."""
    zone = _zone_reported_by(api_url)
    if zone is None:
        forget_reported_zones()
    return zone


@lru_cache(maxsize=4)
def _zone_reported_by(api_url: str) -> str | None:
    # the command's own timeout: a busy API that answers in 6 s must not have its times read in another zone
    client = NightshiftClient(api_url, None)
    try:
        return client.cluster_zone_name()
    finally:
        client.close()


def forget_reported_zones() -> None:
    """Ask each API for its zone again (tests run many CLIs in one process, against APIs on reused ports)."""
    _zone_reported_by.cache_clear()
