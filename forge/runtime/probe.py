"""The gateways' health probe (spec 15: health is measured, not declared).

The runtime's clock (forge.runtime.broker) queues `probe_gateways` every
FORGE_GATEWAY_PROBE_S. It GETs the health URL of every gateway that has one,
each bounded by FORGE_GATEWAY_PROBE_TIMEOUT_S and through the egress checks
dispatches go through (FORGE_EGRESS_ALLOW), all at once in threads, and
records each answer (forge.governance.health). A gateway without a health URL
is measured by its dispatches only.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from django.conf import settings

from engine.executors.health import check_health
from forge.governance import health
from forge.governance.models import Gateway

MAX_THREADS = 16


def probe_gateways() -> dict[str, int]:
    """Probe every gateway with a health URL once; returns how many answered and how many did not."""
    targets = list(Gateway.objects.exclude(health_url="").values_list("pk", "health_url"))
    if not targets:
        return {"healthy": 0, "unhealthy": 0}
    timeout, allowed = settings.FORGE_GATEWAY_PROBE_TIMEOUT_S, settings.FORGE_EGRESS_ALLOW
    with ThreadPoolExecutor(max_workers=min(MAX_THREADS, len(targets)), thread_name_prefix="forge-probe") as pool:
        errors = list(pool.map(lambda target: check_health(target[1], timeout_s=timeout, egress_allow=allowed),
                               targets))
    for (pk, _), error in zip(targets, errors):
        if error is None:
            health.reached(pk, probed=True)
        else:
            health.failed(pk, error, probed=True)
    return {"healthy": errors.count(None), "unhealthy": len(errors) - errors.count(None)}
