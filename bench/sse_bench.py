"""Event stream benchmark: how soon a run's events reach a script over Server-Sent Events
(GET /api/v1/runs/{id}/events), next to the run view's websocket, for the same events.

    .venv/bin/python bench/sse_bench.py [--backends embedded,postgres] [--paced 120] [--runs 2] [--json]

For each backend a fresh deployment (tests/cluster/harness.py, the installation's default timings: both
readers re-read every FORGE_LIVE_POLL_S, 0.2 s embedded, where that re-read is what brings events because the
cluster's wake-ups cannot reach daphne's in-memory layer, and 2 s with Redis, where wake-ups do the work) with
its cluster and daphne. Each of `--runs` runs is an approval, then `--paced` mock steps in a chain (each about
20 ms). While the run waits for its approval, this process opens its websocket (/ws/runs/{id}/, as the run
view) and its event stream (with Accept: text/event-stream, as a script), both as an Approver, and waits for
both replays; another process then approves. For every event after that, the time from its round
(RunEvent.at, taken just before the round's commit, so the figure is an upper bound) to each reader receiving
it (time.time() when its message was read). Both readers run on one event loop in this process and must
receive the same events, once and in order. Beside the p95s, each event's two arrivals paired (SSE minus
websocket), which a busy machine's stalls, felt by both, do not move.

Target: the stream's commit -> received p95 within 20 ms of the websocket's. A busy machine stretches every
figure: each backend's load average is printed. Deployments are removed on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report import log, over_backends, verdict  # noqa: E402 - after ROOT is importable
from tests.browser.console import free_port  # noqa: E402 - after ROOT is importable
from tests.cluster.event_stream_client import EventStream  # noqa: E402
from tests.cluster.harness import deployed  # noqa: E402
from tests.cluster.websocket_client import Socket  # noqa: E402

BACKENDS = {"embedded": ("sqlite", "SQLite WAL + django-q2 ORM broker, readers re-read every 0.2 s"),
            "postgres": ("postgres", "PostgreSQL + Redis, wake-ups through channels_redis")}
TARGET_GAP_MS = 20
WAIT_S = 600

PREPARE = """
from django.contrib.auth.models import Group, User
from django.test import Client
april = User.objects.create(username="april")
april.groups.add(Group.objects.get(name="Approvers"))
client = Client()
client.force_login(april)
result = client.cookies["sessionid"].value
"""
START = """
from forge.runs import services
from forge.workflows.services import workflow_version_save
result = services.run_start(user=None, version=workflow_version_save(user=None, source={source!r})).pk
"""
APPROVE = """
from django.contrib.auth.models import User
from forge.runs import services
from forge.runs.models import Approval
services.approval_decide(user=User.objects.get(username="april"), approval=Approval.objects.get(run_id={run_id}),
                         decision="approve")
result = True
"""


def paced(n: int) -> str:
    """An approval `gate`, then `n` mock steps of about 20 ms in a chain."""
    steps = [f"  - {{id: s{i:04d}, agent: mock, command: go, mock: {{delay_s: 0.02}}, "
             f"depends_on: [{'gate' if i == 0 else f's{i - 1:04d}'}]}}" for i in range(n)]
    return "\n".join(["name: bench_sse", "steps:", "  - {id: gate, approval: required}", *steps]) + "\n"


class SocketReader:
    """The run view's websocket: when each event id arrived."""

    def __init__(self):
        self.received: dict[int, float] = {}
        self.order: list[int] = []

    async def follow(self, port: int, run_id: int, cookie: str) -> None:
        socket = await Socket.open(port, f"/ws/runs/{run_id}/?after=0",
                                   {"Origin": f"http://127.0.0.1:{port}", "Cookie": f"sessionid={cookie}"})
        self.task = asyncio.ensure_future(self._read(socket))

    async def _read(self, socket: Socket) -> None:
        while isinstance(text := await socket.receive(), str):
            at = time.time()
            message = json.loads(text)
            for event in message.get("events", []) if message.get("type") == "events" else []:
                self.received[event["id"]] = at
                self.order.append(event["id"])


async def until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: still not so after {WAIT_S} s")
        await asyncio.sleep(0.01)


def one_run(dep, port: int, cookie: str, steps: int) -> tuple[list[float], list[float]]:
    """Milliseconds from commit to received, over the websocket and over the stream, of one run's events after
    its approval."""
    run_id = dep.query(START.format(source=paced(steps)))

    def events() -> list[tuple[int, float]]:
        rows = dep.sql("SELECT id, at FROM forge_runs_runevent WHERE run_id = %s AND kind <> 'input' ORDER BY id",
                       (run_id,))
        return [(i, at.timestamp()) for i, at in rows]

    def waiting() -> bool:
        return dep.sql("SELECT count(*) FROM forge_runs_approval WHERE run_id = %s AND status = 'pending'",
                       (run_id,))[0][0] == 1

    dep.until(waiting, timeout=WAIT_S, what="the run waits for its approval")

    async def scenario():
        socket, sse = SocketReader(), EventStream(port, run_id, {"Cookie": f"sessionid={cookie}"}, after=0)
        await socket.follow(port, run_id, cookie)
        sse.start()
        shown = (await asyncio.to_thread(events))[-1][0]
        await until(lambda: shown in socket.received and shown in sse.ids(), "both readers replayed the run")
        await asyncio.to_thread(dep.query, APPROVE.format(run_id=run_id))
        await asyncio.to_thread(dep.finished, run_id, timeout=WAIT_S)
        every = await asyncio.to_thread(events)
        await until(lambda: sse.ended.is_set() and every[-1][0] in socket.received, "both readers got every event")
        socket.task.cancel()
        ids = [i for i, _ in every]
        if socket.order != ids or sse.ids() != ids:
            raise RuntimeError(f"run {run_id}: the readers' events differ from the run's")
        sse_at = {event["id"]: event["received"] for event in sse.events}
        later = [(i, at) for i, at in every if i > shown]
        return ([(socket.received[i] - at) * 1000 for i, at in later], [(sse_at[i] - at) * 1000 for i, at in later])

    return asyncio.run(scenario())


def figures(ms: list[float]) -> dict:
    return {"events": len(ms), "p50_ms": round(statistics.median(ms), 1),
            "p95_ms": round(statistics.quantiles(ms, n=20)[-1], 1), "max_ms": round(max(ms), 1)}


def bench_backend(backend: str, args) -> dict:
    with deployed(f"forge-sse-bench-{backend}-", BACKENDS[backend][0], on_error=log, test_timings=False) as dep:
        cookie = dep.query(PREPARE)
        dep.start_cluster()
        port = free_port()
        dep.start_daphne(port)
        out = {"backend": backend, "load_before": round(os.getloadavg()[0], 2)}
        socket_ms, sse_ms = [], []
        for number in range(args.runs):
            by_socket, by_sse = one_run(dep, port, cookie, args.paced)
            socket_ms += by_socket
            sse_ms += by_sse
            log(f"{backend} run {number + 1}: {len(by_sse)} events")
        out.update(websocket=figures(socket_ms), sse=figures(sse_ms), load_after=round(os.getloadavg()[0], 2))
        out["p95_gap_ms"] = round(out["sse"]["p95_ms"] - out["websocket"]["p95_ms"], 1)
        # The same event's two arrivals, paired: what a loaded machine does to both cancels out.
        paired = [by_sse - by_socket for by_sse, by_socket in zip(sse_ms, socket_ms)]
        out["paired_ms"] = {"p50_ms": round(statistics.median(paired), 1),
                            "p95_ms": round(statistics.quantiles(paired, n=20)[-1], 1)}
        return out


def print_table(results: list[dict]) -> None:
    print("Forge event stream (SSE) vs the run view's websocket, the same events, both read by this process")
    for r in results:
        print(f"\n{r['backend']} ({BACKENDS[r['backend']][1]}); 1-min load average {r['load_before']:.1f} before, "
              f"{r['load_after']:.1f} after, on {os.cpu_count()} CPUs")
        for name, label in (("websocket", "websocket"), ("sse", "SSE      ")):
            f = r[name]
            print(f"  {label} commit -> received, {f['events']} events: p50 {f['p50_ms']:.0f} ms, "
                  f"p95 {f['p95_ms']:.0f} ms, max {f['max_ms']:.0f} ms")
        print(f"  SSE p95 - websocket p95: {r['p95_gap_ms']:+.0f} ms ({verdict(r['p95_gap_ms'], TARGET_GAP_MS)}); "
              f"each event's SSE arrival - its websocket arrival: p50 {r['paired_ms']['p50_ms']:+.0f} ms, "
              f"p95 {r['paired_ms']['p95_ms']:+.0f} ms")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paced", type=int, default=120, help="chained steps of each run (2 events each)")
    parser.add_argument("--runs", type=int, default=2, help="runs measured per backend")
    over_backends(parser, BACKENDS, bench_backend, print_table, argv)


if __name__ == "__main__":
    main()
