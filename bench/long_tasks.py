"""What the page's long main-thread tasks were, from a Chrome trace (Playwright's browser.start_tracing, written by
bench/console_bench.py --trace DIR): each task over --over ms on the renderer's main thread, with the longest
events it held (scripts by function and place, style, layout, paint, garbage collection).

    .venv/bin/python bench/long_tasks.py TRACE.json [--over 50] [--top 8]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

TASKS = {"RunTask", "ThreadControllerImpl::RunTask"}


def describe(e: dict) -> str:
    data = (e.get("args") or {}).get("data") or {}
    where = data.get("url", "").rsplit("/", 1)[-1]
    if data.get("functionName") or where:
        return f"{e['name']} {data.get('functionName') or '?'} {where}:{data.get('lineNumber', '')}"
    if data.get("type"):
        return f"{e['name']} {data['type']}"
    return e["name"]


def long_tasks(path: Path, over_ms: float) -> list[tuple[dict, list[dict]]]:
    trace = json.loads(path.read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    main = {k for k, v in names.items() if v == "CrRendererMain"}
    spans = [e for e in events if e.get("ph") == "X" and (e["pid"], e["tid"]) in main and "dur" in e]
    out = []
    for task in (e for e in spans if e["name"] in TASKS and e["dur"] >= over_ms * 1000):
        if not over_ms:
            out.append((task, []))
            continue
        end = task["ts"] + task["dur"]
        inner = [e for e in spans if e is not task and e["pid"] == task["pid"] and e["tid"] == task["tid"]
                 and task["ts"] <= e["ts"] < end and e["name"] not in TASKS]
        out.append((task, inner))
    return out


def longest(path: Path) -> dict:
    """The longest main-thread task of a trace: its wall time and its CPU time (the thread's own time, which a busy
    machine does not stretch: the rest of the wall time the page waited for a CPU)."""
    found = [t for t, _ in long_tasks(path, 0) if t["name"] == "ThreadControllerImpl::RunTask"]
    top = max(found, key=lambda t: t["dur"], default=None)
    cpu = max((t.get("tdur", 0) for t in found), default=0)
    return {"wall_ms": round(top["dur"] / 1000, 1) if top else 0, "its_cpu_ms": round(top.get("tdur", 0) / 1000, 1) if top else 0,
            "most_cpu_ms": round(cpu / 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--over", type=float, default=50)
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    found = long_tasks(args.trace, args.over)
    print(f"{args.trace.name}: {len(found)} tasks of {args.over:g} ms or more")
    for task, inner in found:
        if task["name"] != "ThreadControllerImpl::RunTask":
            continue  # the same task as its RunTask
        print(f"- {task['dur'] / 1000:.0f} ms ({task.get('tdur', 0) / 1000:.0f} ms of CPU) at {task['ts'] / 1000:.0f}")
        for e in sorted(inner, key=lambda e: -e["dur"])[: args.top]:
            print(f"    {e['dur'] / 1000:7.1f} ms  {describe(e)}")


if __name__ == "__main__":
    main()
