"""Console benchmark: how fast the live run view follows a run, in Chromium, against daphne and a real cluster.

    .venv/bin/python bench/console_bench.py [--backends embedded,postgres] [--paced 120] [--big 1000]
        [--burst 500] [--server-steps 1000] [--json]

For each backend a fresh deployment (tests/cluster/harness.py, the installation's default timings: the
consumer polls every FORGE_LIVE_POLL_S, 0.2 s embedded and 2 s with Redis, where wake-ups do the work) with its
cluster and daphne (tests/browser/console.py), watched by Debian's Chromium through Playwright:

- latency: a run of `--paced` mock steps in a chain (each about 20 ms) starts when an approval is given while its
  page is open; for every event after that, the time from the event's round (RunEvent.at, taken just before
  the round's commit, so the figure is an upper bound) to the page applying it (Date.now() in the animation
  frame that applies it). p50 and p95. Same machine, same clock.
- draw: the run view of a finished `--big`-step run (ten chains side by side, a step on the one ten before
  it), from navigation start to the graph drawn (Cytoscape ready, then a frame): first with no stored layout
  (drawn with a quick layering while elkjs lays it out in its Web Worker; then moved, and kept on the
  server), then again with the stored layout.
- burst: `--burst` parallel mock steps released at once by an approval while the page watches (about two
  events each); the longest main-thread task (PerformanceObserver 'longtask', which reports tasks over 50 ms)
  until the page has applied the run's last event, and how long that took.
- server: a `--server-steps`-step run (an approval, then the rest in parallel) watched by the page; the server
  time the run view spends per 1,000 step events of it: the socket's reads and encoding of the events
  (forge.console.stream.events_frame, in chunks, as the consumer does; median of 5 runs; wall-clock time, and
  the process's CPU time, which a busy machine inflates less), plus
  the HTTP requests the page made while the run moved (the step events carry the table's sentence, times and
  cost, so there should be none: no whole read model fetched again). Beside it, for scale, one full read of the
  run view's model (run_view, what the page's /why fetched after every burst before).

Targets: p95 <= 250 ms embedded, <= 100 ms with Redis; the 1,000-step view drawn in < 2 s; no task over 200 ms
during the burst; under 20 ms of server time per 1,000 step events, with no request. Deployments are removed on
exit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.console import CHROMIUM, Console  # noqa: E402 - after ROOT is importable
from tests.cluster.harness import deployed  # noqa: E402

BACKENDS = {"embedded": ("sqlite", "SQLite WAL + django-q2 ORM broker, consumers poll"),
            "postgres": ("postgres", "PostgreSQL + Redis, wake-ups through channels_redis")}
TARGETS = {"p95_ms": {"embedded": 250, "postgres": 100}, "draw_s": 2.0, "longest_task_ms": 200,
           "server_ms_per_1000": 20}
# Predicates are functions: the page's Content-Security-Policy (no 'unsafe-eval') refuses an expression.
LIVE = "() => document.getElementById('live').dataset.state === 'live'"


def gated(name: str, steps: list[str]) -> str:
    """An approval `gate`, then `steps` (YAML flow mappings) that start when it is approved."""
    return "\n".join([f"name: {name}", "steps:", "  - {id: gate, approval: required}", *steps]) + "\n"


def paced(n: int) -> str:
    return gated("bench_paced", [f"  - {{id: s{i:04d}, agent: mock, command: go, mock: {{delay_s: 0.02}}, "
                                 f"depends_on: [{'gate' if i == 0 else f's{i - 1:04d}'}]}}" for i in range(n)])


def burst(n: int) -> str:
    return gated("bench_burst", [f"  - {{id: b{i:04d}, agent: mock, command: go, depends_on: [gate]}}"
                                 for i in range(n)])


def big(n: int) -> str:
    lines = [f"name: bench_big_{n}", "steps:"]
    for i in range(n):
        deps = f", depends_on: [s{i - 10:04d}]" if i >= 10 else ""
        lines.append(f"  - {{id: s{i:04d}, agent: mock, command: go{deps}}}")
    return "\n".join(lines) + "\n"


SERVER_TIME = """
import statistics, time
from forge.console.run_view import run_view
from forge.console.stream import events_frame
from forge.runs.models import Run, RunEvent

def socket_reads():
    started, cpu, after, sent = time.perf_counter(), time.process_time(), {after}, 0
    while True:
        frame = events_frame({run_id}, after)
        if frame is None:
            return time.perf_counter() - started, sent, time.process_time() - cpu
        text, after, _ = frame
        sent += text.count('"kind": "step"')

socket_reads()  # warm: the first query opens the connection
reads = [socket_reads() for _ in range(5)]
steps = reads[0][1]
model = []
for _ in range(5):
    started = time.perf_counter()
    run_view(Run.objects.select_related("version").get(pk={run_id}))
    model.append(time.perf_counter() - started)
result = {{"step_events": steps, "ms_per_1000": statistics.median(r[0] for r in reads) * 1000 * 1000 / steps,
          "cpu_ms_per_1000": statistics.median(r[2] for r in reads) * 1000 * 1000 / steps,
          "run_view_ms": statistics.median(model) * 1000}}
"""

START = """
from forge.runs import services
from forge.workflows.services import workflow_version_save
result = services.run_start(user=None, version=workflow_version_save(user=None, source={source!r})).pk
"""


class Bench:
    def __init__(self, console: Console, browser):
        self.console = console
        self.dep = console.deployment
        self.browser = browser

    def start(self, source: str) -> int:
        return self.dep.query(START.format(source=source))

    def events(self, run_id: int) -> list[tuple[int, datetime]]:
        """The events the page is sent (not the interpreter's inputs)."""
        return self.dep.sql("SELECT id, at FROM forge_runs_runevent WHERE run_id = %s AND kind <> 'input' ORDER BY id",
                            (run_id,))

    def watch(self, run_id: int):
        page = self.console.login(self.browser, "olive")
        page.goto(f"{self.console.url}/runs/{run_id}/")
        page.wait_for_function(LIVE)
        page.wait_for_function("() => document.querySelector('tr[data-step=gate] [data-field=status]').textContent"
                               " === 'waiting'")
        return page

    def approve_and_follow(self, page, run_id: int) -> list[tuple[int, datetime]]:
        done = self.dep.forge("--user", "april", "approve", str(run_id), "gate")
        if done.returncode:
            raise RuntimeError(done.stderr)
        run = self.dep.finished(run_id, timeout=600)
        if run["status"] != "completed":
            raise RuntimeError(f"run {run_id}: {run}")
        events = self.events(run_id)
        page.wait_for_function(f"() => window.forgeRun.lastApplied >= {events[-1][0]}", timeout=120_000)
        return events

    def latency(self, n: int) -> dict:
        run_id = self.start(paced(n))
        page = self.watch(run_id)
        shown = page.evaluate("window.forgeRun.lastApplied")
        events = self.approve_and_follow(page, run_id)
        applied = dict(zip(page.evaluate("window.forgeRun.applied"), page.evaluate("window.forgeRun.appliedAt")))
        page.context.close()
        ms = [applied[i] - at.timestamp() * 1000 for i, at in events if i > shown]
        return {"events": len(ms), "p50_ms": round(statistics.median(ms), 1),
                "p95_ms": round(statistics.quantiles(ms, n=20)[-1], 1), "max_ms": round(max(ms), 1)}

    def draw(self, n: int) -> dict:
        run_id = self.start(big(n))
        run = self.dep.finished(run_id, timeout=600)
        if run["status"] != "completed":
            raise RuntimeError(f"run {run_id}: {run}")
        figures = {}
        for visit in ("first", "stored"):
            context = self.browser.new_context(viewport={"width": 1400, "height": 1000})
            page = self.console.login_in(context, "olive")
            page.goto(f"{self.console.url}/runs/{run_id}/")
            page.wait_for_function("() => window.forgeRun.laidOutAt !== null", timeout=120_000)
            figures[f"{visit}_drawn_s"] = round(page.evaluate("window.forgeRun.drawnAt") / 1000, 2)
            figures[f"{visit}_laid_out_s"] = round(page.evaluate("window.forgeRun.laidOutAt") / 1000, 2)
            if visit == "first":  # the page keeps the layout it computed: wait until the server has it
                self.dep.until(lambda: self.dep.sql("SELECT count(*) FROM forge_workflows_graphlayout")[0][0] > 0,
                               timeout=60, what="the layout kept")
            context.close()
        return {"steps": n, **figures}

    def responsiveness(self, n: int) -> dict:
        run_id = self.start(burst(n))
        page = self.watch(run_id)
        page.evaluate("""() => {
          window.longest = 0; window.longTasks = 0;
          new PerformanceObserver((list) => list.getEntries().forEach((task) => {
            window.longTasks += 1; window.longest = Math.max(window.longest, task.duration);
          })).observe({ type: "longtask" });
        }""")
        shown = page.evaluate("window.forgeRun.lastApplied")
        events = self.approve_and_follow(page, run_id)
        applied = dict(zip(page.evaluate("window.forgeRun.applied"), page.evaluate("window.forgeRun.appliedAt")))
        burst_at = [applied[i] for i, _ in events if i > shown]
        figures = {"events": len(burst_at), "longest_task_ms": round(page.evaluate("window.longest"), 1),
                   "long_tasks": page.evaluate("window.longTasks"),
                   "applied_all_s": round((max(burst_at) - min(burst_at)) / 1000, 2)}
        page.context.close()
        return figures

    def server(self, n: int) -> dict:
        run_id = self.start(burst(n - 1))  # the approval and n - 1 steps
        page = self.watch(run_id)
        shown = page.evaluate("window.forgeRun.lastApplied")
        asked = []  # what the page fetched over HTTP while the run moved (the socket is not a request)
        page.on("request", lambda request: asked.append(request.url)
                if request.resource_type in ("fetch", "xhr", "document") else None)
        self.approve_and_follow(page, run_id)
        page.context.close()
        measured = self.dep.query(SERVER_TIME.format(run_id=run_id, after=shown), timeout=600)
        return {"steps": n, "step_events": measured["step_events"],
                "ms_per_1000": round(measured["ms_per_1000"], 1),
                "cpu_ms_per_1000": round(measured["cpu_ms_per_1000"], 1), "requests": len(asked),
                "asked": sorted({url.split("?")[0].replace(self.console.url, "") for url in asked})[:5],
                "run_view_ms": round(measured["run_view_ms"], 1)}


def bench_backend(backend: str, args, browser) -> dict:
    with deployed(f"forge-console-bench-{backend}-", BACKENDS[backend][0], on_error=log, test_timings=False) as dep:
        bench = Bench(Console(dep, dep.workdir), browser)
        out = {"backend": backend, "load_before": round(os.getloadavg()[0], 2)}
        phases = {"latency": lambda: bench.latency(args.paced), "draw": lambda: bench.draw(args.big),
                  "burst": lambda: bench.responsiveness(args.burst), "server": lambda: bench.server(args.server_steps)}
        for name in args.phases.split(","):
            out[name] = phases[name]()
            log(f"{backend} {name}: {out[name]}")
        out["load_after"] = round(os.getloadavg()[0], 2)
        return out


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def verdict(value: float, limit: float) -> str:
    return f"<= {limit:g} ok" if value <= limit else f"<= {limit:g} MISSED"


def print_table(results: list[dict]) -> None:
    print("Forge console, Chromium (headless) on the same machine as daphne and the cluster")
    for r in results:
        print(f"\n{r['backend']} ({BACKENDS[r['backend']][1]}); 1-min load average {r['load_before']:.1f} before, "
              f"{r['load_after']:.1f} after, on {os.cpu_count()} CPUs")
        if "latency" in r:
            print_latency(r, r["latency"])
        if "draw" in r:
            print_draw(r["draw"])
        if "burst" in r:
            print_burst(r["burst"])
        if "server" in r:
            print_server(r["server"])


def print_latency(r: dict, lat: dict) -> None:
    print(f"  commit -> applied, {lat['events']} events: p50 {lat['p50_ms']:.0f} ms, p95 {lat['p95_ms']:.0f} ms "
          f"({verdict(lat['p95_ms'], TARGETS['p95_ms'][r['backend']])}), max {lat['max_ms']:.0f} ms")


def print_draw(draw: dict) -> None:
    print(f"  {draw['steps']:,}-step run view, navigation start -> graph drawn: "
          f"{draw['stored_drawn_s']:.2f} s with the version's stored layout "
          f"({verdict(draw['stored_drawn_s'], TARGETS['draw_s'])}); the first view of a version "
          f"{draw['first_drawn_s']:.2f} s drawn with a quick layering "
          f"({verdict(draw['first_drawn_s'], TARGETS['draw_s'])}), moved to elkjs's layout at "
          f"{draw['first_laid_out_s']:.2f} s")


def print_burst(burst_: dict) -> None:
    print(f"  burst of {burst_['events']:,} events: longest main-thread task {burst_['longest_task_ms']:.0f} ms "
          f"({verdict(burst_['longest_task_ms'], TARGETS['longest_task_ms'])}; {burst_['long_tasks']} tasks "
          f"over 50 ms), the last applied {burst_['applied_all_s']:.2f} s after the first")


def print_server(server: dict) -> None:
    print(f"  {server['steps']:,}-step run, {server['step_events']:,} step events: the run view's server time "
          f"{server['ms_per_1000']:.1f} ms per 1,000 step events "
          f"({verdict(server['ms_per_1000'], TARGETS['server_ms_per_1000'])}; of which CPU "
          f"{server['cpu_ms_per_1000']:.1f} ms), "
          f"{server['requests']} requests while it moved {server['asked'] or ''}; a full read of the run "
          f"view's model (what /why read per burst before) {server['run_view_ms']:.0f} ms")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="embedded,postgres")
    parser.add_argument("--paced", type=int, default=120, help="chained steps of the latency run (2 events each)")
    parser.add_argument("--big", type=int, default=1000, help="steps of the run whose view is drawn")
    parser.add_argument("--burst", type=int, default=500, help="parallel steps released at once")
    parser.add_argument("--phases", default="latency,draw,burst,server", help="which figures, in this order")
    parser.add_argument("--server-steps", type=int, default=1000, help="steps of the run the server time is read on")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            results = [bench_backend(b, args, browser) for b in args.backends.split(",")]
        finally:
            browser.close()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)
        print(f"\nbenchmark took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
