"""Engine benchmark: plan time against graphlib, interpreter throughput, peak memory.

    .venv/bin/python bench/engine_bench.py [--steps 100000] [--edges 300000] [--run-steps 10000]

Prints one line per figure. Each timing is the best of --repeat runs (the
machine may be busy); peak memory is measured in a separate pass under
tracemalloc, which slows code down and so is never timed.
"""

from __future__ import annotations

import argparse
import gc
import graphlib
import heapq
import random
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.graph import Graph  # noqa: E402
from engine.interpreter import Dispatch, Interpreter, Options, RunStarted, StepFinished  # noqa: E402
from engine.runner import LocalRunner  # noqa: E402
from engine.validation import load_workflow, validate_source  # noqa: E402
from engine.yamlload import MAX_BYTES  # noqa: E402


def random_dag(steps: int, edges: int, seed: int) -> dict[str, list[str]]:
    """A random DAG: `edges` distinct edges, each from an earlier to a later node of a hidden order."""
    rnd = random.Random(seed)
    names = [f"step_{i:06d}" for i in range(steps)]
    rnd.shuffle(names)  # ids sort in another order than the topological one
    deps: list[set[int]] = [set() for _ in range(steps)]
    made = 0
    while made < edges:
        a, b = rnd.randrange(steps), rnd.randrange(steps)
        if a == b:
            continue
        low, high = (a, b) if a < b else (b, a)
        if low not in deps[high]:
            deps[high].add(low)
            made += 1
    return {names[i]: [names[d] for d in sorted(deps[i])] for i in range(steps)}


def plan_ours(graph: dict[str, list[str]]):
    return Graph(graph).layers()


def plan_graphlib_static(graph: dict[str, list[str]]):
    return list(graphlib.TopologicalSorter(graph).static_order())


def plan_graphlib_layers(graph: dict[str, list[str]]):
    sorter = graphlib.TopologicalSorter(graph)
    sorter.prepare()
    layers = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        layers.append(ready)
        sorter.done(*ready)
    return layers


def best_time(fn, arg, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn(arg)
        best = min(best, time.perf_counter() - start)
    return best


def peak_memory(fn, arg) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn(arg)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def mock_workflow_yaml(steps: int, seed: int) -> str:
    """A workflow of mock steps, each depending on up to three random earlier steps."""
    rnd = random.Random(seed)
    lines = ["name: throughput", "steps:"]
    for i in range(steps):
        lines += [f"  - id: s{i}", "    agent: mock", f"    command: step {i}"]
        if i:
            deps = sorted({f"s{rnd.randrange(i)}" for _ in range(3)})
            lines.append(f"    depends_on: [{', '.join(deps)}]")
    return "\n".join(lines) + "\n"


def largest_workflow_yaml(seed: int) -> bytes:
    """The mock workflow of mock_workflow_yaml with as many steps as fit in the 1 MiB bound."""
    low, high = 1, 20_000
    while low < high:  # the most steps whose document fits
        middle = (low + high + 1) // 2
        if len(mock_workflow_yaml(middle, seed).encode()) <= MAX_BYTES:
            low = middle
        else:
            high = middle - 1
    return mock_workflow_yaml(low, seed).encode()


def validate(data: bytes):
    report = validate_source(data)
    assert report.valid, report.problems[:3]
    return report


def drive_interpreter(workflow) -> int:
    """Feed the interpreter directly: every dispatch succeeds at once. Returns steps completed."""
    interpreter = Interpreter.new(workflow, run_id="bench", options=Options(max_concurrency=16))
    heap: list = []
    seq = 0
    now = 0.0
    commands = interpreter.advance(RunStarted(at=now))
    while True:
        for command in commands:
            if type(command) is Dispatch:
                seq += 1
                heapq.heappush(heap, (now, seq, StepFinished(command.step, command.attempt, True, command.iteration,
                                                             {}, "", at=now)))
        if not heap:
            break
        now, _, event = heapq.heappop(heap)
        commands = interpreter.advance(event)
    assert interpreter.state.status == "completed", interpreter.state.status
    return len(workflow.steps)


def drive_local_runner(workflow) -> int:
    outcome = LocalRunner(workflow, fast=True, options=Options(max_concurrency=16)).run()
    assert outcome.status == "completed", outcome.status
    return len(workflow.steps)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=300_000)
    parser.add_argument("--run-steps", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    print(f"python {sys.version.split()[0]}; best of {args.repeat} runs")
    graph = random_dag(args.steps, args.edges, args.seed)
    ours = plan_ours(graph)
    reference = plan_graphlib_layers(graph)
    assert ours == reference, "engine layers differ from graphlib's"
    t_ours = best_time(plan_ours, graph, args.repeat)
    t_static = best_time(plan_graphlib_static, graph, args.repeat)
    t_layers = best_time(plan_graphlib_layers, graph, args.repeat)
    print(f"plan {args.steps:,} steps / {args.edges:,} edges ({len(ours):,} layers):")
    print(f"  engine Graph.layers          {t_ours * 1000:8.1f} ms  peak {peak_memory(plan_ours, graph) / 2**20:6.1f} MiB")
    print(f"  graphlib static_order        {t_static * 1000:8.1f} ms  peak "
          f"{peak_memory(plan_graphlib_static, graph) / 2**20:6.1f} MiB")
    print(f"  graphlib get_ready/done      {t_layers * 1000:8.1f} ms  peak "
          f"{peak_memory(plan_graphlib_layers, graph) / 2**20:6.1f} MiB")
    print(f"  ratio engine / graphlib static_order: {t_ours / t_static:.2f}x "
          f"(target <= 2.00x); / get_ready loop: {t_ours / t_layers:.2f}x")

    document = largest_workflow_yaml(args.seed)
    t_validate = best_time(validate, document, args.repeat)
    steps = len(validate(document).workflow.steps)
    print(f"validate the largest document the bound allows ({len(document):,} bytes, {steps:,} steps):")
    print(f"  validate_source              {t_validate * 1000:8.1f} ms  peak "
          f"{peak_memory(validate, document) / 2**20:6.1f} MiB")

    workflow = load_workflow(mock_workflow_yaml(args.run_steps, args.seed))
    n = args.run_steps
    t_direct = best_time(drive_interpreter, workflow, args.repeat)
    t_runner = best_time(drive_local_runner, workflow, args.repeat)
    print(f"interpreter, {n:,}-step mock workflow, virtual time, concurrency 16:")
    print(f"  interpreter alone            {n / t_direct:9,.0f} steps/s  {t_direct / n * 1e6:6.1f} us/step  "
          f"peak {peak_memory(drive_interpreter, workflow) / 2**20:6.1f} MiB  (target >= 20,000 steps/s)")
    print(f"  local runner + mock agent    {n / t_runner:9,.0f} steps/s  {t_runner / n * 1e6:6.1f} us/step  "
          f"peak {peak_memory(drive_local_runner, workflow) / 2**20:6.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
