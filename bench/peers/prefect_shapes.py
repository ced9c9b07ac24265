"""Time Prefect flows of N no-op tasks (chain, fanout); runs inside the Prefect venv, prints one JSON line."""
import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time

# Settings must be in the environment before prefect is imported.
HOME = tempfile.mkdtemp(prefix="forge-bench-prefect-")
# Registered before prefect's own exit hooks, so it runs after the ephemeral server stops.
atexit.register(shutil.rmtree, HOME, ignore_errors=True)
os.environ.update(
    PREFECT_HOME=HOME,
    PREFECT_SERVER_ANALYTICS_ENABLED="false",
    DO_NOT_TRACK="1",
    PREFECT_SERVER_ALLOW_EPHEMERAL_MODE="true",
    PREFECT_LOGGING_LEVEL="WARNING",
)
for key in ("PREFECT_API_URL", "PREFECT_API_KEY", "PREFECT_PROFILES_PATH"):
    os.environ.pop(key, None)

import prefect  # noqa: E402
from prefect import flow, get_client, task  # noqa: E402
from prefect.futures import wait  # noqa: E402


@task
def noop(x=None):
    """Do nothing but return the input."""
    return x


@flow
def chain(n: int):
    """Run N tasks, each taking the previous task's result."""
    x = 0
    for _ in range(n):
        x = noop(x)
    return x


@flow
def fanout(n: int):
    """Submit N independent tasks, then wait for all of them."""
    futures = [noop.submit(i) for i in range(n)]
    wait(futures)
    return len(futures)


def completed_task_runs(flow_run_id) -> int:
    """Count the flow run's task runs whose COMPLETED state the server has recorded."""
    body = {
        "flow_runs": {"id": {"any_": [str(flow_run_id)]}},
        "task_runs": {"state": {"type": {"any_": ["COMPLETED"]}}},
    }
    with get_client(sync_client=True) as client:
        return client.request("POST", "/task_runs/count", json=body).json()


def run(fn, n: int) -> tuple[float, float]:
    """Run a flow; return seconds until it returns and until all its task runs are recorded."""
    t0 = time.perf_counter()
    state = fn(n, return_state=True)
    returned = time.perf_counter() - t0
    assert state.is_completed(), state
    # Task states reach the database asynchronously (events), after the flow has returned.
    deadline = time.monotonic() + 600
    while completed_task_runs(state.state_details.flow_run_id) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{fn.name}: task runs not all recorded after 600s")
        time.sleep(0.25)
    return returned, time.perf_counter() - t0


def main() -> None:
    """Warm up, then time each requested shape and print the figures as JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--shapes", default="chain,fanout")
    args = ap.parse_args()
    shapes = {"chain": chain, "fanout": fanout}
    out = {"peer": "prefect", "version": prefect.__version__, "n": args.n}
    t0 = time.perf_counter()
    for fn in shapes.values():
        run(fn, 5)
    print(f"prefect warm-up {time.perf_counter() - t0:.2f}s (home {HOME})", file=sys.stderr)
    for name in args.shapes.split(","):
        s, persisted = run(shapes[name], args.n)
        out[f"{name}_s"] = round(s, 4)
        out[f"{name}_ms_per_step"] = round(s * 1000 / args.n, 4)
        out[f"{name}_persisted_s"] = round(persisted, 4)
        print(f"prefect {name} n={args.n}: {s:.2f}s, all states recorded at {persisted:.2f}s", file=sys.stderr)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
