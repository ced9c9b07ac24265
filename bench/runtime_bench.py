"""Runtime benchmark: Forge runs of no-op steps on a real cluster, next to Prefect and Dagster.

    .venv/bin/python bench/runtime_bench.py [--n 1000] [--backends embedded,postgres] [--shapes chain,fanout]
        [--workers 2] [--quick] [--peer prefect] [--peer dagster] [--json]

For each backend a fresh deployment is made with tests/cluster/harness.py
(embedded: a SQLite file and the ORM broker; postgres: a new database on
127.0.0.1:5432 and Redis under a queue name of its own), migrated, and served
by one `manage.py qcluster`, with the installation's default timings. Each shape
(chain: every step depends on the previous; fanout: N independent steps) runs
once with inline steps (`agent: mock`) and once with queued steps (a python
agent with {"inline": false} calling forge.runs.callables.noop), through
`manage.py forge run FILE --wait`. Run time is Run.created_at -> Run.finished_at
from the database; the wall clock around the command (process start, import
of the file, polling) is printed beside it. Then one queued step's latency is
the median over sequential 1-step runs of its dispatch event -> its
StepResult.finished_at. Deployments are removed on exit, error or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.cluster.harness import Deployment, deployed, queued_python_agent  # noqa: E402 - after ROOT is importable

BACKENDS = {"embedded": "SQLite WAL + django-q2 ORM broker", "postgres": "PostgreSQL + Redis"}
HARNESS_BACKENDS = {"embedded": "sqlite", "postgres": "postgres"}
AGENTS = {"inline": "mock", "queued": "worker"}  # mode -> the `agent:` of every step
TARGET_MS = {("inline", "embedded"): 3.0, ("inline", "postgres"): 3.0,
             ("queued", "embedded"): 60.0, ("queued", "postgres"): 15.0}
PEER_TARGET = 0.1  # inline chain at least 10x faster than each peer
NOOP = "forge.runs.callables.noop"


def workflow_yaml(name: str, shape: str, n: int, agent: str) -> str:
    """N no-op steps: a chain (each on the previous) or a fan-out (one layer)."""
    command = NOOP if agent == "worker" else "noop"
    lines = [f"name: {name}", "steps:"]
    for i in range(n):
        lines += [f"  - id: s{i:05d}", f"    agent: {agent}", f"    command: {command}"]
        if shape == "chain" and i:
            lines.append(f"    depends_on: [s{i - 1:05d}]")
    return "\n".join(lines) + "\n"


RUN_FIGURES = """
from django.db.models import Max, Min
from forge.runs.models import Run, StepResult
run = Run.objects.get(pk={run_id})
steps = StepResult.objects.filter(run=run)
span = steps.aggregate(first=Min("started_at"), last=Max("finished_at"))
result = dict(status=run.status, db_s=(run.finished_at - run.created_at).total_seconds(),
              steps_s=(span["last"] - span["first"]).total_seconds(),
              completed=steps.filter(status="completed").count())
"""


def timed_run(dep: Deployment, path: Path, n: int, concurrency: int) -> dict:
    """`forge run FILE --wait` under a wall clock; then the run's own duration from its timestamps."""
    start = time.perf_counter()
    limit = 120 + 2 * n  # seconds; far beyond any target
    done = dep.forge("run", str(path), "--wait", "--json", "--timeout", str(limit), timeout=limit + 60,
                     env={"FORGE_RUNNER_CONCURRENCY": str(concurrency)})
    wall = time.perf_counter() - start
    found = re.search(r"run (\d+) of", done.stderr)
    if done.returncode or not found:
        raise RuntimeError(f"forge run {path.name} exited {done.returncode}:\n{done.stderr[-2000:]}\n{dep.logs()}")
    figures = dep.query(RUN_FIGURES.format(run_id=found.group(1)), timeout=600)
    if figures["status"] != "completed" or figures["completed"] != n:
        raise RuntimeError(f"{path.name}: {figures}")
    return {"wall_s": round(wall, 3), "db_s": round(figures["db_s"], 3), "steps_s": round(figures["steps_s"], 3),
            "ms_per_step": round(figures["db_s"] * 1000 / n, 3)}


LATENCY = """
import statistics, time
from forge.runs import services
from forge.runs.models import Run, RunEvent, StepResult
from forge.workflows.services import workflow_version_save
version = workflow_version_save(user=None, source={source!r})
dispatch_ms, run_ms = [], []
for _ in range({runs}):
    run = services.run_start(user=None, version=version)
    deadline = time.monotonic() + 60
    while not Run.objects.filter(pk=run.pk, finished_at__isnull=False).exists():
        assert time.monotonic() < deadline, "a 1-step run did not finish within 60 s"
        time.sleep(0.005)
    run.refresh_from_db()
    assert run.status == "completed", run.status
    done = StepResult.objects.get(run=run).finished_at
    sent = next(e.at for e in RunEvent.objects.filter(run=run, kind="step").order_by("id")
                if e.data.get("status") == "running")
    dispatch_ms.append((done - sent).total_seconds() * 1000)
    run_ms.append((run.finished_at - run.created_at).total_seconds() * 1000)
result = dict(runs=len(run_ms), dispatch_to_done_ms=round(statistics.median(dispatch_ms), 2),
              dispatch_to_done_p90_ms=round(statistics.quantiles(dispatch_ms, n=10)[-1], 2),
              run_created_to_finished_ms=round(statistics.median(run_ms), 2))
"""


def bench_backend(backend: str, args) -> dict:
    """Deploy, warm up, time every shape and mode, then the one-step latency; always clean up."""
    with deployed(f"forge-bench-{backend}-", HARNESS_BACKENDS[backend], on_error=log, test_timings=False,
                  FORGE_WORKERS=str(args.workers), FORGE_PYTHON_CALLABLES=NOOP) as dep:
        workdir = dep.workdir
        queued_python_agent(dep)
        dep.start_cluster()
        started = time.perf_counter()
        for mode, agent in AGENTS.items():  # the first run waits for the cluster to come up
            path = workdir / f"warmup_{mode}.yaml"
            path.write_text(workflow_yaml(f"warmup_{mode}", "chain", 1, agent))
            timed_run(dep, path, 1, 1)
        log(f"{backend}: cluster ready and warm in {time.perf_counter() - started:.1f} s")
        out: dict = {"backend": backend, "shapes": {}, "load_before": round(os.getloadavg()[0], 2)}
        for shape in args.shapes:
            for mode, agent in AGENTS.items():
                path = workdir / f"{shape}_{mode}.yaml"
                path.write_text(workflow_yaml(f"bench_{shape}_{mode}", shape, args.n, agent))
                figures = timed_run(dep, path, args.n, args.n if shape == "fanout" else 1)
                figures["target_ms"] = TARGET_MS[mode, backend]
                out["shapes"].setdefault(shape, {})[mode] = figures
                log(f"{backend} {shape} {mode}: {figures}")
        source = workflow_yaml("bench_latency", "chain", 1, "worker")
        out["latency"] = dep.query(LATENCY.format(source=source, runs=args.latency_runs), timeout=600)
        log(f"{backend} latency: {out['latency']}")
        out["load_after"] = round(os.getloadavg()[0], 2)
        return out


def bench_peer(peer: str, n: int, shapes: list[str]) -> dict:
    """bench.peers.run.run_peer, whose child (in a session of its own) is stopped too on Ctrl-C."""
    from bench.peers.run import run_peer

    try:
        return run_peer(peer, n, shapes)
    except KeyboardInterrupt:
        for pid in own_children():
            try:
                os.killpg(pid, signal.SIGINT)  # the peer script's exit hooks remove its temporary home
            except ProcessLookupError:
                pass
        raise


def own_children() -> list[int]:
    """Pids of this process's children (Linux /proc)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            pids.append(int(stat.parent.name))
    return pids


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def verdict(value: float, limit: float) -> str:
    return "ok" if value <= limit else "MISSED"


def print_table(result: dict) -> None:
    n = result["n"]
    print(f"Forge runtime, {n:,} no-op steps per run, {result['workers']} workers, every step state committed; "
          "run = Run.created_at -> finished_at (DB); wall = around `forge run --wait` (process start, import, "
          "polling); steps = first step started -> last step finished")
    for backend in result["backends"]:
        print(f"\n{backend['backend']} ({BACKENDS[backend['backend']]}); 1-min load average "
              f"{backend['load_before']:.1f} before, {backend['load_after']:.1f} after, on {os.cpu_count()} CPUs")
        print(f"  {'shape':<7} {'mode':<7} {'run s':>8} {'ms/step':>8} {'wall s':>8} {'steps s':>8}  target (on run s)")
        for shape, modes in backend["shapes"].items():
            for mode, f in modes.items():
                print(f"  {shape:<7} {mode:<7} {f['db_s']:8.2f} {f['ms_per_step']:8.2f} {f['wall_s']:8.2f} "
                      f"{f['steps_s']:8.2f}  <= {f['target_ms']:g} ms/step {verdict(f['ms_per_step'], f['target_ms'])}")
        lat = backend["latency"]
        print(f"  one queued step, median of {lat['runs']} sequential runs: dispatch -> done "
              f"{lat['dispatch_to_done_ms']:.1f} ms (p90 {lat['dispatch_to_done_p90_ms']:.1f} ms); "
              f"1-step run created -> finished {lat['run_created_to_finished_ms']:.1f} ms")
    for peer in result["peers"]:
        print(f"\n{peer['peer']} {peer['version']}, n={peer['n']:,}; ratio = Forge run s / peer s (< 1: Forge faster)"
              + ("; Prefect's comparable figure is once every task state is recorded" if peer["peer"] == "prefect"
                 else ""))
        for shape in result["shapes"]:
            if f"{shape}_s" not in peer:
                continue
            returned, persisted = peer[f"{shape}_s"], peer.get(f"{shape}_persisted_s")
            print(f"  {shape:<7} {returned:8.2f} s returned"
                  + (f", {persisted:.2f} s all states recorded" if persisted is not None else ""))
            for backend in result["backends"]:
                for mode, f in backend["shapes"].get(shape, {}).items():
                    ratio = f["db_s"] / (persisted or returned)
                    other = f" (vs returned {f['db_s'] / returned:.3f})" if persisted is not None else ""
                    goal = f"  target <= {PEER_TARGET:g} {verdict(ratio, PEER_TARGET)}" \
                        if (shape, mode) == ("chain", "inline") else ""
                    print(f"    {backend['backend']:<9} {mode:<7} {f['db_s']:8.2f} s  ratio {ratio:6.3f}{other}{goal}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="steps per run (default 1000)")
    parser.add_argument("--backends", default="embedded,postgres")
    parser.add_argument("--shapes", default="chain,fanout")
    parser.add_argument("--workers", type=int, default=2, help="FORGE_WORKERS of the cluster")
    parser.add_argument("--latency-runs", type=int, help="sequential 1-step runs for the latency (30; quick 10)")
    parser.add_argument("--peer", action="append", default=[], choices=["prefect", "dagster"])
    parser.add_argument("--quick", action="store_true", help="n=100 and 10 latency runs: a smoke run")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    if args.quick:
        args.n = 100
    args.latency_runs = args.latency_runs or (10 if args.quick else 30)
    if args.latency_runs < 2:
        parser.error("--latency-runs must be at least 2")
    args.backends = [b for b in args.backends.split(",") if b]
    args.shapes = [s for s in args.shapes.split(",") if s]
    for backend in args.backends:
        if backend not in BACKENDS:
            parser.error(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    for shape in args.shapes:
        if shape not in ("chain", "fanout"):
            parser.error(f"unknown shape {shape!r}; choose from chain, fanout")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM cleans up like Ctrl-C
    started = time.perf_counter()
    result = {"n": args.n, "workers": args.workers, "shapes": args.shapes, "backends": [], "peers": []}
    for backend in args.backends:
        result["backends"].append(bench_backend(backend, args))
    for peer in args.peer:
        log(f"running {peer} (its virtualenv is made on first use)")
        result["peers"].append(bench_peer(peer, args.n, args.shapes))
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
        print(f"\nbenchmark took {result['elapsed_s']:.0f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted; clusters stopped, databases and temporary files removed")
        sys.exit(130)
