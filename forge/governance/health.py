"""A gateway's measured health (spec 15): the one writer of `healthy`, `checked_at`, `last_error` and `failures`.

Two measures feed it: the probe of its health URL (forge.runtime.probe) and
the connections of real dispatches (forge.runtime.gateways). A probe that
fails marks the gateway unhealthy at once: answering its health URL is what
healthy means. Dispatches count the connections refused in a row: once they
reach UNHEALTHY_AFTER_DISPATCH_FAILURES (one dispatch and every retry of it,
FORGE_GATEWAY_RETRY_S) the gateway is unhealthy. Any answer, to a probe or a
dispatch, makes it healthy again and resets the count. The last error stays
shown after a recovery, with the time of the check.

Rows are written with `update()`: a measure is no admin's change, so it is
not audited, and it does not drop the dispatch snapshot of every process.
The gates read health live (forge.governance.context).
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from forge.governance.models import Gateway

MAX_ERROR = 300  # Gateway.last_error's length
MEASURED = ("healthy", "checked_at", "last_error", "failures")  # what only this module writes


def unhealthy_after_dispatch_failures() -> int:
    """Connections refused in a row, by dispatches, that make a gateway unhealthy: one dispatch's and its
    retries'."""
    return 1 + len(settings.FORGE_GATEWAY_RETRY_S)


def reached(gateway_id: int, *, probed: bool = False) -> None:
    """The gateway answered (a probe's 2xx, or any HTTP reply to a dispatch)."""
    rows = Gateway.objects.filter(pk=gateway_id)
    if not probed:  # a dispatch that reached a healthy gateway writes nothing: the hot path stays a read
        rows = rows.exclude(healthy=True, failures=0)
    rows.update(healthy=True, failures=0, checked_at=timezone.now())


def failed(gateway_id: int, error: str, *, probed: bool = False) -> None:
    """The gateway could not be reached: `error` says why (host and port only, never a path or a header)."""
    now = timezone.now()
    fields = {"failures": F("failures") + 1, "last_error": error[:MAX_ERROR], "checked_at": now}
    if probed:
        fields["healthy"] = False
    Gateway.objects.filter(pk=gateway_id).update(**fields)
    if not probed:
        Gateway.objects.filter(pk=gateway_id, healthy=True,
                               failures__gte=unhealthy_after_dispatch_failures()).update(healthy=False)
