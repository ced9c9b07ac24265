"""YAML pane benchmark: the editor's CodeMirror pane (console/editor/yaml_pane.js) in Chromium, on the test page of
tests/browser/yaml_pane_page.py (the pane alone, under the console's Content-Security-Policy).

    .venv/bin/python bench/yaml_pane_bench.py [--lint-steps 500] [--typing-steps 1000] [--keys 60] [--json]

- lint: a `--lint-steps`-step document; a key typed in the middle of it, then the pane's lint run that follows
  (its own performance.now() around the lint source: the text cut into pieces, the changed piece parsed and
  checked, the others' diagnostics taken from its cache, the server's problems added), `--keys` times. p50, p95, max. Target: < 50 ms a keystroke.
- typing: a `--typing-steps`-step document opened (from navigation to the pane linted, and the longest task
  meanwhile: the first lint parses every piece of the text, in slices of about 12 ms), the cursor put in its middle
  (the longest task of that jump: the lines brought into view are highlighted and drawn), then `--keys` keys
  typed at 40 ms apart there, with the lint and completion
  running as they do; the longest main-thread task meanwhile (PerformanceObserver 'longtask', which reports
  tasks over 50 ms; none means every task stayed under 50 ms). Target: none over 50 ms. Beside it the longest
  the main thread was held while typing, shorter ones too: the longest wait of a timer asked for every 5 ms, less
  those 5 ms (it shows how far under 50 ms the typing stays, and a busy machine's stretch).

`measure(browser, ...)` gives the figures as a dict for bench/console_bench.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.console import CHROMIUM  # noqa: E402
from tests.browser.yaml_pane_page import PanePage, workflow  # noqa: E402

LONG_TASKS = """
window.longTasks = [];
new PerformanceObserver((list) => window.longTasks.push(...list.getEntries().map((e) => e.duration)))
  .observe({ type: "longtask", buffered: true });
"""
HEARTBEAT_MS = 5
HEARTBEAT = """(every) => {
  window.heldFor = 0;
  let last = performance.now();
  const beat = () => {
    const now = performance.now();
    window.heldFor = Math.max(window.heldFor, now - last - every);
    last = now;
    setTimeout(beat, every);
  };
  setTimeout(beat, every);
}"""
STEP_LINES = 7  # what tests/browser/yaml_pane_page.workflow writes per step (but the first)


def open_pane(browser, served: PanePage, text: str):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.add_init_script(LONG_TASKS)
    page = context.new_page()
    page.set_default_timeout(60_000)
    started = time.perf_counter()
    served.open(page, text)
    page.wait_for_function("() => window.pane.lintStats.runs > 0")
    opened = time.perf_counter() - started
    return context, page, opened


def middle_of(page, steps: int) -> None:
    """Puts the cursor at the end of the `command:` line of the middle step, scrolled into view."""
    line = 4 + (steps // 2) * STEP_LINES + 3
    page.evaluate("(line) => { const pane = window.pane; const at = pane.view.state.doc.line(line).to;"
                  " pane.view.dispatch({selection: {anchor: at}, scrollIntoView: true}); pane.focus(); }", line)


def lint_per_key(browser, served: PanePage, steps: int, keys: int) -> dict:
    context, page, _ = open_pane(browser, served, workflow(steps))
    middle_of(page, steps)
    took = []
    for i in range(keys):
        runs = page.evaluate("window.pane.lintStats.runs")
        page.keyboard.type("xyz "[i % 4])
        page.wait_for_function("(runs) => window.pane.lintStats.runs > runs", arg=runs)
        took.append(page.evaluate("window.pane.lintStats.last"))
    context.close()
    took.sort()
    return {"steps": steps, "keys": keys, "p50_ms": statistics.median(took),
            "p95_ms": took[max(0, round(0.95 * len(took)) - 1)], "max_ms": took[-1]}


def typing(browser, served: PanePage, steps: int, keys: int) -> dict:
    context, page, opened = open_pane(browser, served, workflow(steps))
    page.wait_for_timeout(500)  # the open's own tasks reported, apart from typing's
    at_open = page.evaluate("window.longTasks.splice(0)")
    middle_of(page, steps)
    page.wait_for_timeout(500)  # the jump's own work (the lines now in view parsed and drawn), apart from typing's
    at_jump = page.evaluate("window.longTasks.splice(0)")
    page.evaluate(HEARTBEAT, HEARTBEAT_MS)
    page.keyboard.type(("retry again " * (keys // 12 + 1))[:keys], delay=40)
    page.wait_for_timeout(1000)  # the last lint run and the observer's report
    during = page.evaluate("window.longTasks")
    held = page.evaluate("window.heldFor")
    lint = page.evaluate("window.pane.lintStats")
    context.close()
    return {"steps": steps, "keys": keys, "open_s": opened, "open_longest_task_ms": max(at_open, default=0),
            "jump_longest_task_ms": max(at_jump, default=0),
            "typing_long_tasks": len(during), "typing_longest_task_ms": max(during, default=0),
            "typing_longest_hold_ms": held,
            "lint_last_ms": lint["last"], "lint_longest_slice_ms": lint["longestSlice"]}


def measure(browser, lint_steps: int = 500, typing_steps: int = 1000, keys: int = 60) -> dict:
    served = PanePage()
    try:
        return {"lint": lint_per_key(browser, served, lint_steps, keys),
                "typing": typing(browser, served, typing_steps, keys)}
    finally:
        served.close()


def verdict(value: float, limit: float) -> str:
    return "ok" if value < limit else "OVER"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lint-steps", type=int, default=500)
    parser.add_argument("--typing-steps", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            result = measure(browser, args.lint_steps, args.typing_steps, args.keys)
        finally:
            browser.close()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    lint, typed = result["lint"], result["typing"]
    print("load average %.1f %.1f %.1f (a busy machine stretches every task)" % os.getloadavg())
    print(f"schema lint a keystroke, {lint['steps']} steps, {lint['keys']} keys: p50 {lint['p50_ms']:.1f} ms, "
          f"p95 {lint['p95_ms']:.1f} ms, max {lint['max_ms']:.1f} ms  (< 50 ms: {verdict(lint['p95_ms'], 50)})")
    print(f"open, {typed['steps']} steps: {typed['open_s']:.2f} s to the pane linted, longest task "
          f"{typed['open_longest_task_ms']:.0f} ms (0 = none over 50 ms); the jump to its middle: longest task "
          f"{typed['jump_longest_task_ms']:.0f} ms")
    print(f"typing {typed['keys']} keys, {typed['steps']} steps: {typed['typing_long_tasks']} tasks over 50 ms, "
          f"longest {typed['typing_longest_task_ms']:.0f} ms (0 = none over 50 ms), the main thread held at most "
          f"{typed['typing_longest_hold_ms']:.0f} ms; the lint after them "
          f"{typed['lint_last_ms']:.1f} ms, its longest slice of work in the whole session "
          f"{typed['lint_longest_slice_ms']:.1f} ms  ({verdict(typed['typing_longest_task_ms'], 50)})")


if __name__ == "__main__":
    main()
