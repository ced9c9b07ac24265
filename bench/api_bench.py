"""API benchmark: how fast a script lists runs and starts one through the REST API, against daphne and a real
cluster, as `curl` or the `forge` command would call it.

    .venv/bin/python bench/api_bench.py [--backends embedded,postgres] [--runs 1000] [--lists 200] [--starts 100]
        [--json]

For each backend a fresh deployment (tests/cluster/harness.py) with its cluster and daphne, and an Operator
with a personal token (runs:read, runs:write). The database holds `--runs` runs of a one-step workflow, made by
the service (one run started through it, then copied with statuses and times spread over 30 days, each with its
step's row), so the list reads a table of that size. Then, over one kept-alive HTTP connection with the token:

- list: `--lists` times GET /api/v1/runs (the first page, 50 runs, newest first), then as many times with a
  filter (?status=completed&limit=50), each timed from sending the request to the whole JSON body read;
- start: `--starts` times POST /api/v1/runs with a new Idempotency-Key each (as the CLI sends), the run
  committed and queued when the 201 arrives; the cluster runs them meanwhile, as it would.

p50 and p95 of each. Targets: the list's p95 < 50 ms, a start's p95 < 100 ms. A busy machine stretches every
figure: each backend's load average is printed. Deployments are removed on exit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report import log, over_backends, verdict  # noqa: E402 - after ROOT is importable
from tests.browser.console import free_port  # noqa: E402 - after ROOT is importable
from tests.cluster.harness import deployed  # noqa: E402

BACKENDS = {"embedded": ("sqlite", "SQLite WAL + django-q2 ORM broker"),
            "postgres": ("postgres", "PostgreSQL + Redis")}
TARGETS_MS = {"list": 50, "list_filtered": 50, "start": 100}
WORKFLOW = "name: bench_api\nsteps:\n  - {id: only, agent: mock, command: go}\n"
WARM_UP = 10

PREPARE = """
import random
from datetime import timedelta
from django.contrib.auth.models import Group, User
from django.utils import timezone
from forge.accounts.tokens import token_create
from forge.runs import services
from forge.runs.models import Run, StepResult
from forge.workflows.services import workflow_version_save
olive = User.objects.create(username="olive")
olive.groups.add(Group.objects.get(name="Operators"))
secret = token_create(user=olive, name="bench", scopes=["runs:read", "runs:write"])[1]
model = services.run_start(user=olive, version=workflow_version_save(user=None, source={source!r}))
step = StepResult.objects.get(run=model)
random.seed(7)
now = timezone.now()
statuses = ["completed"] * 8 + ["failed", "cancelled"]  # finished: the cluster has nothing to resume
copies = []
for i in range({runs} - 1):
    created = now - timedelta(seconds=random.randrange(30 * 86400))
    status = statuses[i % len(statuses)]
    copies.append(Run(workflow_id=model.workflow_id, version_id=model.version_id, status=status,
                      args=model.args, started_by=olive, created_at=created, started_at=created,
                      progressed_at=created, finished_at=created + timedelta(seconds=3),
                      error="the step failed" if status == "failed" else None, pinned=model.pinned,
                      library=model.library))
Run.objects.bulk_create(copies, batch_size=500)
rows = [StepResult(run=run, step=step.step, status=run.status) for run in Run.objects.exclude(pk=model.pk)]
StepResult.objects.bulk_create(rows, batch_size=500)
result = {{"token": secret, "runs": Run.objects.count()}}
"""


def timed(client: httpx.Client, method: str, url: str, **kwargs) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = client.request(method, url, **kwargs)
    response.read()
    return (time.perf_counter() - started) * 1000, response


def figures(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 1), "max_ms": round(ordered[-1], 1)}


def measure(client: httpx.Client, method: str, url: str, count: int, *, expect: int, body=None) -> list[float]:
    samples = []
    for i in range(WARM_UP + count):
        headers = {"Idempotency-Key": str(uuid.uuid4())} if method == "POST" else {}
        ms, response = timed(client, method, url, json=body, headers=headers)
        if response.status_code != expect:
            raise SystemExit(f"{method} {url} answered {response.status_code}: {response.text[:500]}")
        if i >= WARM_UP:
            samples.append(ms)
    return samples


def bench_backend(backend: str, args) -> dict:
    log(f"{backend}: deploying and making {args.runs} runs")
    with deployed("forge-api-bench-", BACKENDS[backend][0], test_timings=False,
                  FORGE_API_RATE_LIMIT="1000000") as deployment:
        prepared = deployment.query(PREPARE.format(source=WORKFLOW, runs=args.runs), timeout=600)
        deployment.start_cluster()
        port = free_port()
        deployment.start_daphne(port)
        out = {"backend": backend, "runs": prepared["runs"], "load_before": round(os.getloadavg()[0], 2)}
        headers = {"Authorization": f"Bearer {prepared['token']}", "Accept": "application/json"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60) as client:
            page = client.get("/api/v1/runs").json()
            if len(page["results"]) != 50 or not page["next"]:
                raise SystemExit(f"the first page is not 50 runs with a next page: {str(page)[:300]}")
            log(f"{backend}: listing")
            out["list"] = figures(measure(client, "GET", "/api/v1/runs", args.lists, expect=200))
            out["list_filtered"] = figures(measure(client, "GET", "/api/v1/runs?status=completed&limit=50",
                                                   args.lists, expect=200))
            log(f"{backend}: starting")
            out["start"] = figures(measure(client, "POST", "/api/v1/runs", args.starts, expect=201,
                                           body={"workflow": "bench_api"}))
        out["load_after"] = round(os.getloadavg()[0], 2)
        return out


def print_table(results: list[dict]) -> None:
    print("Forge REST API: list runs and start a run, over HTTP with a personal token, daphne + cluster")
    for r in results:
        print(f"\n{r['backend']} ({BACKENDS[r['backend']][1]}), {r['runs']} runs; 1-min load average "
              f"{r['load_before']:.1f} before, {r['load_after']:.1f} after")
        for name, label in (("list", "GET /api/v1/runs (first page of 50)"),
                            ("list_filtered", "GET /api/v1/runs?status=completed&limit=50"),
                            ("start", "POST /api/v1/runs (with an Idempotency-Key)")):
            f = r[name]
            print(f"  {label}, {f['n']} requests: p50 {f['p50_ms']:.1f} ms, p95 {f['p95_ms']:.1f} ms "
                  f"({verdict(f['p95_ms'], TARGETS_MS[name])}), max {f['max_ms']:.1f} ms")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs in the database while listing")
    parser.add_argument("--lists", type=int, default=200, help="list requests measured, of each kind")
    parser.add_argument("--starts", type=int, default=100, help="start requests measured")
    over_backends(parser, BACKENDS, bench_backend, print_table, argv)


if __name__ == "__main__":
    main()
