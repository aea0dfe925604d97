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
    """`settings` with the zone and off-peak windows the API reports where they name none of their own: the
    chat served apart and `nightshift ask` read "tonight" and "9am" where the GPUs are, and "tonight" as the
    cluster's windows, as the chat at the API's own /ui does."""
    own_windows = "offpeak" in settings.model_fields_set
    if settings.timezone and own_windows:
        return settings
    zone, windows = _clock_reported_by(settings.api_url)
    if zone is None:
        forget_reported_zones()  # an API that did not answer is asked again next time
    update = {"timezone": zone} if zone and not settings.timezone else {}
    if windows is not None and not own_windows:
        update["offpeak"] = windows
    return settings.model_copy(update=update) if update else settings


@lru_cache(maxsize=4)
def _clock_reported_by(api_url: str) -> tuple[str | None, str | None]:
    # the command's own timeout: a busy API that answers in 6 s must not have its times read in another zone
    client = NightshiftClient(api_url, None)
    try:
        return client.cluster_clock()
    finally:
        client.close()


def forget_reported_zones() -> None:
    """Ask each API for its zone again (tests run many CLIs in one process, against APIs on reused ports)."""
    _clock_reported_by.cache_clear()
