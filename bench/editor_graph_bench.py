"""Editor graph benchmark: the editor's graph (console/editor/editor_graph.js) in Chromium, on the page of
tests/browser/editor_graph_page.py (the graph, palette and inspector alone), with 1,000-step outlines of three
shapes: "dag" (nothing folds: 1,000 nodes drawn), "fan" (a fan-out folded into one node) and "lanes" (ten chains
folded into ten).

    .venv/bin/python bench/editor_graph_bench.py [--steps 1000] [--moves 60] [--json]

- open: window.show(outline) on an empty graph, timed in the page (the outline already there): the elements made,
  the quick places, the first view. ELK's layout follows in its worker (then: the time until its places are drawn).
- update: the same outline again (what every validation answer does), and the outline with one step more (a
  patch's answer): the difference applied, timed in the page; then three outlines each with a new step and edge
  (text typed in the YAML changes the shape), each followed by ELK's answer: the longest main-thread task
  meanwhile (PerformanceObserver 'longtask', as for the drag). Target: no task over 50 ms.
- drag: a step dragged `--moves` pointer moves; the longest main-thread task meanwhile (PerformanceObserver
  'longtask', which reports tasks over 50 ms; none means every task stayed under 50 ms) and the longest gap
  between two frames. Target: no task over 50 ms.

`measure(browser, ...)` gives the figures as a dict for bench/console_bench.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.console import CHROMIUM  # noqa: E402
from tests.browser.editor_graph_page import big_outline, edge, serve_fixture, step  # noqa: E402

WATCH = """() => {
  window.longTasks = []; window.frameGaps = []; window.watching = true;
  if (!window.longObserver) {
    window.longObserver = new PerformanceObserver((list) => window.longTasks.push(...list.getEntries().map((e) => e.duration)));
    window.longObserver.observe({ type: "longtask" });
  }
  let last = performance.now();
  const frame = (t) => { window.frameGaps.push(t - last); last = t; if (window.watching) requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
}"""


def one(browser, url: str, shape: str, steps: int, moves: int) -> dict:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(url)
    page.wait_for_function("() => window.fixtureReady === true")
    outline = big_outline(steps, shape)
    page.evaluate("(o) => { window.outline = o; }", outline)
    opened = page.evaluate("() => { const t = performance.now(); window.show(window.outline, {}, {}); return performance.now() - t; }")
    started = time.perf_counter()
    page.wait_for_function("() => document.getElementById('graph').dataset.layout === 'done'")
    laid = (time.perf_counter() - started) * 1000
    drawn = page.evaluate("() => window.graph.cy.nodes().length")
    same = page.evaluate("() => { const t = performance.now(); window.show(window.outline, {}, {}); return performance.now() - t; }")
    first = outline["steps"][0]["id"]
    grown = {**outline, "steps": [*outline["steps"], step("zz_new", agent="mock")], "edges": [*outline["edges"], edge(first, "zz_new")]}
    page.evaluate("(o) => { window.grown = o; }", grown)
    more = page.evaluate("() => { const t = performance.now(); window.show(window.grown, {}, {}); return performance.now() - t; }")
    page.wait_for_function("() => document.getElementById('graph').dataset.layout === 'done'")
    page.evaluate(WATCH)
    for k in range(3):
        again = {**grown, "steps": [*grown["steps"], step(f"zz_typed{k}", agent="mock")],
                 "edges": [*grown["edges"], edge(first, f"zz_typed{k}")]}
        page.evaluate("(o) => { window.again = o; }", again)
        page.evaluate("() => window.show(window.again, {}, {})")
        page.wait_for_function("() => document.getElementById('graph').dataset.layout === 'done'")
    page.wait_for_timeout(300)  # the frames after the last answer count
    typed = page.evaluate("() => { window.watching = false; return window.longTasks; }")
    page.evaluate("(o) => window.show(o, {}, {})", grown)
    page.wait_for_function("() => document.getElementById('graph').dataset.layout === 'done'")
    # the step dragged: one in the middle of what is drawn
    target = page.evaluate("() => { const n = window.graph.cy.nodes().filter((x) => !x.data('group')); return n[Math.floor(n.length / 2)].id(); }")
    page.evaluate("(id) => window.graph.select(id)", target)
    page.wait_for_timeout(300)  # the view settles before watching (not a measured wait)
    page.evaluate(WATCH)
    at = page.evaluate("(id) => window.graph.cy.getElementById(id).renderedPosition()", target)
    box = page.locator(".editor-graph-canvas").bounding_box()
    x, y = box["x"] + at["x"], box["y"] + at["y"]
    page.mouse.move(x, y)
    page.mouse.down()
    for i in range(1, moves + 1):
        page.mouse.move(x + i * 3, y + i * 2)
    page.mouse.up()
    page.wait_for_function("() => window.said.placed.length === 1")
    page.wait_for_timeout(300)  # the frames after the drop are part of the drag
    tasks, gap = page.evaluate("() => { window.watching = false; return [window.longTasks, Math.max(...window.frameGaps.slice(1))]; }")
    context.close()
    return {"shape": shape, "steps": steps, "drawn": drawn, "open_ms": round(opened, 1), "elk_ms": round(laid),
            "update_same_ms": round(same, 1), "update_one_more_ms": round(more, 1),
            "reshape_longest_task_ms": round(max(typed), 1) if typed else None,
            "drag_longest_task_ms": round(max(tasks), 1) if tasks else None, "drag_long_tasks": len(tasks),
            "drag_longest_frame_gap_ms": round(gap, 1)}


def measure(browser, steps: int = 1000, moves: int = 60) -> list[dict]:
    with tempfile.TemporaryDirectory() as folder:
        url, server = serve_fixture(Path(folder) / "site")
        try:
            return [one(browser, url, shape, steps if shape != "lanes" else steps + 1, moves) for shape in ("dag", "fan", "lanes")]
        finally:
            server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--moves", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            rows = measure(browser, args.steps, args.moves)
        finally:
            browser.close()
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        longest = "none over 50 ms" if r["drag_longest_task_ms"] is None else f"{r['drag_longest_task_ms']} ms ({r['drag_long_tasks']} over 50 ms)"
        reshape = "none over 50 ms" if r["reshape_longest_task_ms"] is None else f"{r['reshape_longest_task_ms']} ms"
        print(f"{r['shape']:>5}: {r['steps']} steps, {r['drawn']} nodes drawn; open {r['open_ms']} ms, ELK's places +{r['elk_ms']} ms; "
              f"update: same outline {r['update_same_ms']} ms, one step more {r['update_one_more_ms']} ms, "
              f"longest task over three reshapes {reshape}; "
              f"drag: longest task {longest}, longest frame gap {r['drag_longest_frame_gap_ms']} ms")


if __name__ == "__main__":
    main()
