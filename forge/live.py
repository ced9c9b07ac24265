"""Wake-ups for the console's live views, sent after a round commits.

A wake-up carries no data: it tells the consumers of a run's page (group `run-<id>`) and of the approvals
inbox (group `approvals`) to read what is new from the database, which stays the only truth. channels_redis
drops messages over its capacity, and the in-memory layer of the embedded default does not cross from the
cluster's processes to daphne's, so consumers also poll (FORGE_LIVE_POLL_S): a wake-up only makes them sooner.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

log = logging.getLogger(__name__)
APPROVALS = "approvals"


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def wake(run_id: int, *, approvals: bool = False) -> None:
    """Tell the run's live views, and the approvals inbox when an approval changed, to look again."""
    if not settings.REDIS_URL:
        return  # the in-memory layer reaches no other process: the consumers' poll is what updates them
    layer = get_channel_layer()
    groups = [run_group(run_id)] + ([APPROVALS] if approvals else [])
    for group in groups:
        try:
            async_to_sync(layer.group_send)(group, {"type": "wake"})
        except Exception:  # noqa: BLE001 - a lost wake-up costs one poll interval, never the round
            log.warning("could not wake the live views of %s", group, exc_info=True)
