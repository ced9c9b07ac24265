"""Load tests' deployment: twenty runs queued before any cluster runs, so their first rounds race each other.

Each run has one step, `held` (tests/cluster/load_callables.py), which holds
its worker until the test writes the release file: no step ends while the
runs are being governed, so what the governance let through is what runs.
"""

from __future__ import annotations

import json
import time

from tests.cluster.harness import Deployment

RUNS = 20
HELD = "tests.cluster.load_callables.held"


def deploy(workdir, backend: str, *, workers: int) -> Deployment:
    deployed = Deployment(workdir, backend, FORGE_PYTHON_CALLABLES=HELD, FORGE_TEST_LOAD_DIR=str(workdir),
                          FORGE_WORKERS=str(workers), FORGE_STEP_TIMEOUT_MAX_S="600")
    deployed.query("from forge.governance.models import Agent\n"
                   "Agent.objects.create(name='held', provider='python', config={'inline': False}, "
                   "estimated_cost=1.0)\nresult = True")
    return deployed


def queue_runs(deployment: Deployment, name: str, setup: str = "") -> list[int]:
    """Save a one-step workflow and start RUNS runs of it (their rounds wait in the queue); `setup` runs first."""
    source = f"name: {name}\nsteps:\n  - {{id: work, agent: held, command: {HELD}}}\n"
    return deployment.query(
        f"{setup}\n"
        "from forge.runs import services\nfrom forge.workflows.services import workflow_version_save\n"
        f"version = workflow_version_save(user=None, source={source!r})\n"
        f"result = [services.run_start(user=None, version=version).pk for _ in range({RUNS})]")


def governed(deployment: Deployment, run_ids: list[int]) -> dict[str, int]:
    """How many dispatches were allowed, how many runs were governed at least once, and the gauge's counts."""
    counts = deployment.query(
        "from forge.audit.models import AuditEvent\n"
        f"events = AuditEvent.objects.filter(run_id__in={run_ids}, code__startswith='forge.governance.')\n"
        "result = {'allowed': events.filter(code='forge.governance.allowed').count(),\n"
        "          'governed_runs': events.values('run_id').distinct().count()}")
    return {**counts, **gauge(deployment)}


def until(deployment: Deployment, condition, *, timeout: float, what: str):
    """Poll `condition()` until it returns something truthy, which is returned."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not so after {timeout} s; cluster logs:\n{deployment.logs()}")
        time.sleep(0.5)
    return value


def gauge(deployment: Deployment) -> dict[str, int]:
    path = deployment.workdir / "gauge.json"
    return {"started": 0, "peak": 0, "inside": 0, **(json.loads(path.read_text() or "{}") if path.exists() else {})}


def release(deployment: Deployment) -> None:
    (deployment.workdir / "release").touch()


def outcomes(deployment: Deployment, run_ids: list[int]) -> dict[str, int]:
    """How the runs that ended ended: "status error_code" -> how many."""
    return deployment.query(
        "from collections import Counter\nfrom forge.runs.models import Run\n"
        f"ended = Run.objects.filter(pk__in={run_ids}, finished_at__isnull=False)\n"
        "result = dict(Counter(f'{s} {c}' for s, c in ended.values_list('status', 'error_code')))")


def when_all_ended(deployment: Deployment, run_ids: list[int]) -> dict[str, int]:
    """`outcomes` once every run has ended."""
    def ended():
        found = outcomes(deployment, run_ids)
        return found if sum(found.values()) == len(run_ids) else None
    return until(deployment, ended, timeout=300, what="every run ended")


def spend(deployment: Deployment, run_ids: list[int]) -> dict[str, float]:
    """What the runs spent, and what they still hold reserved."""
    return deployment.query(
        "from django.db.models import Sum\nfrom forge.governance.models import TokenEvent\n"
        f"spend = TokenEvent.objects.filter(run_id__in={run_ids}).aggregate(cost=Sum('cost'), reserved=Sum('reserved'))\n"
        "result = {'cost': spend['cost'] or 0.0, 'reserved': spend['reserved'] or 0.0}")
