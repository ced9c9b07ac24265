"""Time Dagster jobs of N no-op ops (chain, fanout); runs inside the Dagster venv, prints one JSON line."""
import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HOME = tempfile.mkdtemp(prefix="forge-bench-dagster-")
atexit.register(shutil.rmtree, HOME, ignore_errors=True)
os.environ["DAGSTER_HOME"] = HOME
# No telemetry; the default storage for a DAGSTER_HOME instance is persistent SQLite.
Path(HOME, "dagster.yaml").write_text("telemetry:\n  enabled: false\n")

import dagster as dg  # noqa: E402

# Quiet console; every event still goes to the instance's event log storage.
RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def make_op(name: str, takes_input: bool) -> dg.OpDefinition:
    """Build a uniquely named no-op op, with or without one input."""
    if takes_input:

        @dg.op(name=name)
        def _op(x):
            return x

    else:

        @dg.op(name=name)
        def _op():
            return 0

    return _op


def build(shape: str, n: int) -> dg.JobDefinition:
    """Build the job for a shape: a chain of N ops or N independent ops."""
    chain = shape == "chain"
    ops = [make_op(f"{shape}_{i}", chain and i > 0) for i in range(n)]
    deps = {f"{shape}_{i}": {"x": dg.DependencyDefinition(f"{shape}_{i - 1}")} for i in range(1, n)} if chain else {}
    return dg.GraphDefinition(name=f"{shape}_{n}", node_defs=ops, dependencies=deps).to_job()


def run(instance: dg.DagsterInstance, shape: str, n: int) -> float:
    """Build and execute one job in-process; return the execution's seconds."""
    t0 = time.perf_counter()
    job = build(shape, n)
    print(f"dagster {shape} n={n}: built in {time.perf_counter() - t0:.2f}s", file=sys.stderr)
    t0 = time.perf_counter()
    result = job.execute_in_process(run_config=RUN_CONFIG, instance=instance)
    s = time.perf_counter() - t0
    assert result.success
    done = instance.get_records_for_run(result.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS, limit=n + 1)
    assert len(done.records) == n, (len(done.records), n)
    return s


def main() -> None:
    """Warm up, then time each requested shape and print the figures as JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--shapes", default="chain,fanout")
    args = ap.parse_args()
    out = {"peer": "dagster", "version": dg.__version__, "n": args.n}
    with dg.DagsterInstance.get() as instance:
        t0 = time.perf_counter()
        for shape in ("chain", "fanout"):
            run(instance, shape, 5)
        print(f"dagster warm-up {time.perf_counter() - t0:.2f}s (home {HOME})", file=sys.stderr)
        for name in args.shapes.split(","):
            s = run(instance, name, args.n)
            out[f"{name}_s"] = round(s, 4)
            out[f"{name}_ms_per_step"] = round(s * 1000 / args.n, 4)
            print(f"dagster {name} n={args.n}: {s:.2f}s", file=sys.stderr)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
