"""Console benchmark: how fast the live run view follows a run and how the workflow editor answers, in Chromium,
against daphne and a real cluster.

    .venv/bin/python bench/console_bench.py [--backends embedded,postgres] [--paced 120] [--big 1000]
        [--burst 500] [--server-steps 1000] [--editor-steps 1000] [--editor-small 100] [--ops 60] [--keys 60]
        [--moves 60] [--phases latency,...,editor_tasks] [--components] [--port N] [--json]

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
  (forge.runs.reads.stream.events_frame, in chunks, as the consumer does; median of 5 runs; wall-clock time, and
  the process's CPU time, which a busy machine inflates less), plus
  the HTTP requests the page made while the run moved (the step events carry the table's sentence, times and
  cost, so there should be none: no whole read model fetched again). Beside it, for scale, one full read of the
  run view's model (run_view, what the page's /why fetched after every burst before).

- editor_open: the editor of a saved `--editor-steps`-step workflow (mock steps in block style, of two shapes:
  "dag", each step after one or two of the 30 before it, so nothing folds and every node is drawn; "lanes", a
  step then ten chains, which fold into ten), opened by an Operator: from navigation start to the first frame
  where the graph holds its nodes, the pane holds the whole text and the draft's first validation has answered
  (its problems drawn, Valid or not shown); the first open makes the person's draft, the second finds it. Beside
  it, where the time went: the HTML, the draft's JSON asked and received, the longest task; and ELK's places.
- editor_requests: from the editor page of an `--editor-small`-step workflow, with its session and CSRF token,
  one after the other: `--ops` patches (field.set, edge.add, step.rename in turn) through POST
  /editor/drafts/<id>/patch, each on the text the last one answered; then `--keys` texts a person typing makes
  (a character more each) through POST /editor/drafts/<id>/text. Each timed in the page from fetch() to its JSON
  read. p50, p95 (by kind for patches). Beside them, the endpoints' own work (patch, validation, outline: no
  HTTP, no draft write) replayed in one process of the deployment, wall and CPU.
- editor_tasks: the editor of the "dag" workflow: the longest main-thread task (PerformanceObserver 'longtask')
  while a step is dragged `--moves` pointer moves and dropped (until its place is kept), then while `--keys` keys
  are typed 40 ms apart at the end of a step's command in the middle of the YAML (until the last validation
  answer is drawn).
- --components: once, the editor's panes alone: bench/yaml_pane_bench.py and bench/editor_graph_bench.py.

Targets: p95 <= 250 ms embedded, <= 100 ms with Redis; the 1,000-step view drawn in < 2 s; no task over 200 ms
during the burst; under 20 ms of server time per 1,000 step events, with no request; the editor of 1,000 steps
open in < 2 s, the patch round trip p95 < 100 ms embedded, the validation round trip p95 < 150 ms, no task over
50 ms while dragging or typing. Deployments are removed on exit. A busy machine stretches every figure: each
backend's load average is printed.
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

from bench.report import log, verdict  # noqa: E402 - after ROOT is importable
from playwright.sync_api import Error as PlaywrightError, sync_playwright  # noqa: E402

from tests.browser.console import CHROMIUM, Console  # noqa: E402 - after ROOT is importable
from tests.cluster.harness import deployed  # noqa: E402

from bench.long_tasks import longest  # noqa: E402

BACKENDS = {"embedded": ("sqlite", "SQLite WAL + django-q2 ORM broker, consumers poll"),
            "postgres": ("postgres", "PostgreSQL + Redis, wake-ups through channels_redis")}
TARGETS = {"p95_ms": {"embedded": 250, "postgres": 100}, "draw_s": 2.0, "longest_task_ms": 200,
           "server_ms_per_1000": 20, "editor_open_s": 2.0, "patch_p95_ms": {"embedded": 100},
           "text_p95_ms": 150, "editor_task_ms": 50}
PHASES = ("latency", "draw", "burst", "server", "editor_open", "editor_requests", "editor_tasks")
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
from forge.runs.reads.run_view import run_view
from forge.runs.reads.stream import events_frame
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


# -- the workflow editor (issue 20) --------------------------------------------------------------------------------
EDITOR_READY = "#editor[data-ready=true]"
# Polled every frame: the draft's answer taken (its text in the pane, its problems drawn, Valid or not shown) and the
# graph holding nodes; the time of that frame since navigation start.
EDITOR_DRAWN = """(length) => {
  const e = window.forgeEditor, state = document.getElementById('validity').dataset.state;
  return document.querySelector('#editor[data-ready=true]') && e && e.graph && e.graph.cy.nodes().length > 0
    && e.text().length === length && (state === 'valid' || state === 'invalid') && performance.now();
}"""
EDITOR_STATE = """(length) => {
  const e = window.forgeEditor, v = document.getElementById('validity');
  return { ready: document.getElementById('editor').dataset.ready || null,
           nodes: e && e.graph && e.graph.cy.nodes().length, text: e ? e.text().length : null, length,
           validity: v && v.textContent };
}"""
LONG_TASKS = """
window.longTasks = []; window.longTaskStarts = [];
new PerformanceObserver((list) => list.getEntries().forEach((e) => {
  window.longTasks.push(e.duration); window.longTaskStarts.push(e.startTime);
})).observe({ type: "longtask", buffered: true });
"""
# Where an editor's open spends its time (ms since navigation start): the page's HTML received, the draft's JSON
# (its text, outline and problems) asked and received, and the longest task's start.
OPEN_TIMELINE = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const draft = performance.getEntriesByType('resource').find((e) => /\\/editor\\/drafts\\/\\d+\\/$/.test(e.name));
  const longest = window.longTasks.indexOf(Math.max(...window.longTasks));
  return { html_ms: nav.responseEnd, draft_asked_ms: draft ? draft.requestStart : null,
           draft_received_ms: draft ? draft.responseEnd : null,
           longest_task_start_ms: longest >= 0 ? window.longTaskStarts[longest] : null };
}"""
# The patch and text endpoints' own work (editor_api.draft_patch / draft_text without HTTP and the draft's write),
# replayed in one process of the deployment: wall and CPU time per request.
SERVER_EDITS = """
import json, time
from pathlib import Path
from engine.edit import apply_patch, outline
from forge.workflows.editing import text_problems

job = json.loads(Path({path!r}).read_text())
text, patch, typing = job["text"], [], []
text_problems(text)  # warm: the step library's first read
for op in job["ops"]:
    wall, cpu = time.perf_counter(), time.process_time()
    text = apply_patch(text, op).text
    text_problems(text), outline(text)
    patch.append((op["op"], (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
for typed in job["typed"]:
    wall, cpu = time.perf_counter(), time.process_time()
    text_problems(typed), outline(typed)
    typing.append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
result = {{"patch": patch, "typing": typing}}
"""
# Requests from the page, with its session and CSRF token, each timed in the page from before fetch() to its JSON
# read: what the editor's controller does for a gesture (patch) or a pause in typing (text).
POSTER = """() => {
  const root = document.getElementById('editor');
  const csrf = document.querySelector('#editor-csrf input[name=csrfmiddlewaretoken]').value;
  window.bench = { api: root.dataset.api, text: window.forgeEditor.text(),
                   revision: window.forgeEditor.state.revision };
  window.bench.post = async (path, body) => {
    const t = performance.now();
    const response = await fetch(window.bench.api + path, { method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-CSRFToken': csrf },
      body: JSON.stringify({ ...body, revision: ++window.bench.revision }) });
    const data = await response.json();
    return { ms: performance.now() - t, status: response.status, data };
  };
}"""
PATCH = """async (op) => {
  const r = await window.bench.post('patch', { text: window.bench.text, op });
  if (r.status === 200) window.bench.text = r.data.text;
  return { ms: r.ms, status: r.status, code: r.data.error ? r.data.error.code : null };
}"""
TEXT = """async (text) => {
  const r = await window.bench.post('text', { text });
  return { ms: r.ms, status: r.status, problems: (r.data.problems || []).length };
}"""
# The YAML pane's EditorView, from the vendored bundle the page loaded (the page keeps its pane to itself).
PANE_AT = """async (line) => {
  const url = performance.getEntriesByType('resource').map((e) => e.name).find((n) => /codemirror[^/]*\\.js$/.test(n));
  const { EditorView } = await import(url);
  const view = EditorView.findFromDOM(document.querySelector('#yaml .cm-editor'));
  const at = view.state.doc.line(line).to;
  view.dispatch({ selection: { anchor: at }, scrollIntoView: true });
  view.focus();
}"""
TYPED = "retry again "
TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel", "v8.execute",
                    "blink.user_timing"]


def editor_yaml(name: str, n: int, shape: str) -> str:
    """A workflow of `n` mock steps of the editor graph bench's shapes (tests/browser/editor_graph_page.big_outline:
    "dag", each step after one or two of the 30 before it, nothing folds; "lanes", a step then ten chains, which
    fold into ten), in block style with a comment now and then; each step's `command:` line ends its block."""
    from tests.browser.editor_graph_page import big_outline

    outline = big_outline(n, shape)
    deps: dict[str, list[str]] = {}
    for e in outline["edges"]:
        deps.setdefault(e["to"], []).append(e["from"])
    lines = [f"name: {name}", f"description: {n} mock steps ({shape}), written by bench/console_bench.py", "steps:"]
    for k, s in enumerate(outline["steps"]):
        if k % 100 == 0:
            lines.append(f"  # steps {k} to {k + 99}")
        lines += [f"  - id: {s['id']}", "    agent: mock"]
        if s["id"] in deps:
            lines.append(f"    depends_on: [{', '.join(deps[s['id']])}]")
        lines.append(f"    command: go {k}")
    return "\n".join(lines) + "\n"


def patch_ops(text: str, count: int) -> list[dict]:
    """`count` ops in turn field.set, edge.add and step.rename over the steps of `text` (editor_yaml's): edges go
    from a step to one later in the document (never a cycle), renames each take a step not renamed before, and later
    ops name the steps by their new ids."""
    ids = [line.split("id: ", 1)[1] for line in text.splitlines() if line.startswith("  - id: ")]
    now = dict(zip(ids, ids))
    ops = []
    for k in range(count):
        i = (k * 7) % (len(ids) - 12)
        a, b = now[ids[i]], now[ids[i + 11]]
        kind = k % 3
        if kind == 0:
            ops.append({"op": "field.set", "id": a, "path": ["command"], "value": f"go again {k}"})
        elif kind == 1:
            ops.append({"op": "edge.add", "from": a, "to": b})
        else:
            renamed = ids[(k * 5) % len(ids)]
            new = f"{now[renamed]}_r"
            ops.append({"op": "step.rename", "id": now[renamed], "to": new})
            now[renamed] = new
    return ops


def typed_texts(text: str, count: int) -> list[str]:
    """The texts a person makes typing `count` characters at the end of the middle step's `command:` line."""
    lines = text.splitlines(keepends=True)
    commands = [k for k, line in enumerate(lines) if line.startswith("    command: ")]
    at = commands[len(commands) // 2]
    words = (" and check it again" * (count // 19 + 1))[:count]
    head, line, tail = "".join(lines[:at]), lines[at].rstrip("\n"), "".join(lines[at + 1:])
    return [f"{head}{line}{words[:k]}\n{tail}" for k in range(1, count + 1)]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


def summary(ms: list[float]) -> dict:
    return {"count": len(ms), "p50_ms": round(statistics.median(ms), 1), "p95_ms": round(p95(ms), 1),
            "max_ms": round(max(ms), 1)}


class EditorBench:
    """The editor page of a saved workflow, opened by olive (an Operator) in Chromium against daphne."""

    def __init__(self, console: Console, browser, trace: Path | None = None):
        self.console = console
        self.dep = console.deployment
        self.browser = browser
        self.trace = trace  # a directory: the drag's and the typing's Chrome traces are written there

    def tracing(self, page, what: str):
        """Start a Chrome trace of `page` when asked (--trace); the function that stops it."""
        if not self.trace:
            return lambda: {}
        self.trace.mkdir(parents=True, exist_ok=True)
        path = self.trace / f"editor-{what}-{self.console.deployment.workdir.name}.json"
        self.browser.start_tracing(page=page, path=str(path), categories=TRACE_CATEGORIES)

        def stop():
            self.browser.stop_tracing()
            log(f"trace: {path} (bench/long_tasks.py reads it)")
            return longest(path)
        return stop

    def saved(self, name: str, n: int, shape: str) -> str:
        """`name` saved with editor_yaml's text (passed as a file: a command line argument holds 128 KiB)."""
        text = editor_yaml(name, n, shape)
        path = self.dep.workdir / f"{name}.yaml"
        path.write_text(text)
        self.dep.query("from pathlib import Path\nfrom forge.workflows.services import workflow_version_save\n"
                       f"result = workflow_version_save(user=None, source=Path({str(path)!r}).read_text()).number")
        return text

    def editor(self, name: str, length: int):
        """A new logged-in page on the editor of `name`, drawn; (page, seconds from navigation start to drawn)."""
        context = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(LONG_TASKS)
        page = self.console.login_in(context, "olive")
        page.goto(f"{self.console.url}/workflows/{name}/edit/")
        try:
            drawn = page.wait_for_function(EDITOR_DRAWN, arg=length, polling="raf", timeout=120_000).json_value()
        except PlaywrightError:
            raise RuntimeError(f"the editor of {name} was not drawn: {page.evaluate(EDITOR_STATE, length)}") from None
        return page, drawn / 1000

    def open(self, n: int) -> dict:
        """Navigation to /workflows/<name>/edit/ -> the graph drawn, the text in the pane and the draft's first
        validation answered (its problems drawn, Valid shown), for both shapes; the first open makes the draft,
        the second finds it (both after an untimed open of a small workflow); then the time to ELK's places."""
        figures = {"steps": n}
        warm = self.saved("bench_editor_warm", 3, "dag")  # untimed: daphne's first editor (imports, the schema)
        self.editor("bench_editor_warm", len(warm))[0].context.close()
        for shape in ("dag", "lanes"):
            name = f"bench_editor_{shape}_{n}"
            text = self.saved(name, n + (shape == "lanes"), shape)  # lanes: a step, then ten chains of n / 10
            for visit in ("first", "again"):
                page, drawn_s = self.editor(name, len(text))
                page.wait_for_function("() => document.getElementById('graph').dataset.layout === 'done'",
                                       timeout=120_000)
                laid = page.evaluate("() => performance.now()") / 1000
                figures[f"{shape}_{visit}"] = {
                    "drawn_s": round(drawn_s, 2), "laid_out_s": round(laid, 2),
                    **{k: v if v is None else round(v) for k, v in page.evaluate(OPEN_TIMELINE).items()},
                    "nodes": page.evaluate("() => window.forgeEditor.graph.cy.nodes().length"),
                    "valid": page.evaluate("() => window.forgeEditor.state.valid"),
                    "open_longest_task_ms": round(max(page.evaluate("window.longTasks"), default=0), 1)}
                page.context.close()
        return figures

    def requests(self, n: int, ops: int, keys: int) -> dict:
        """Patch and text round trips on an `n`-step workflow, one after the other, from its editor page."""
        name = f"bench_editor_small_{n}"
        text = self.saved(name, n, "dag")
        page, _ = self.editor(name, len(text))
        page.evaluate(POSTER)
        page.evaluate(TEXT, text)  # untimed: the first request of a daphne worker thread
        sent = patch_ops(text, ops)
        patched = [page.evaluate(PATCH, op) for op in sent]
        refused = [p for p in patched if p["status"] != 200]
        texts = typed_texts(page.evaluate("() => window.bench.text"), keys)
        typed = [page.evaluate(TEXT, t) for t in texts]
        page.context.close()
        if refused:
            raise RuntimeError(f"patches refused: {refused[:3]}")
        job = self.dep.workdir / "edits.json"
        job.write_text(json.dumps({"text": text, "ops": sent, "typed": texts}))
        server = self.dep.query(SERVER_EDITS.format(path=str(job)), timeout=600)
        kinds = {kind: summary([p["ms"] for op, p in zip(sent, patched) if op["op"] == kind])
                 for kind in sorted({op["op"] for op in sent})}
        return {"steps": n,
                "patch": {**summary([p["ms"] for p in patched]), "by_kind": kinds,
                          "server": summary([wall for _, wall, _ in server["patch"]]),
                          "server_cpu": summary([cpu for _, _, cpu in server["patch"]])},
                "text": {**summary([t["ms"] for t in typed]), "valid_answers": sum(t["problems"] == 0 for t in typed),
                         "server": summary([wall for wall, _ in server["typing"]]),
                         "server_cpu": summary([cpu for _, cpu in server["typing"]])}}

    def tasks(self, n: int, moves: int, keys: int) -> dict:
        """The longest main-thread task on the editor of an `n`-step workflow (nothing folds: every node drawn)
        while a step is dragged `moves` pointer moves and dropped (its place kept), then while `keys` keys are
        typed 40 ms apart at the end of a step's command in the YAML pane (the validations they cause answered
        and drawn: the graph, the problems, the inspector)."""
        name = f"bench_editor_dag_{n}"
        text = self.saved(name, n, "dag")  # the same text again: the same version
        page, _ = self.editor(name, len(text))
        page.wait_for_function("() => document.getElementById('graph').dataset.layout === 'done'", timeout=120_000)
        page.wait_for_timeout(500)  # the open's own tasks reported, apart from the drag's
        page.evaluate("() => window.longTasks.splice(0)")
        target = page.evaluate("() => { const n = window.forgeEditor.graph.cy.nodes().filter((x) => !x.data('group')"
                               " && x.visible()); return n[Math.floor(n.length / 2)].id(); }")
        at = page.evaluate("(id) => window.forgeEditor.graph.cy.getElementById(id).renderedPosition()", target)
        if not page.evaluate("(p) => p.x > 20 && p.y > 20 && p.x < window.forgeEditor.graph.cy.width() - 20"
                             " && p.y < window.forgeEditor.graph.cy.height() - 20", at):
            page.evaluate("(id) => window.forgeEditor.graph.select(id)", target)  # brings it into view
            page.wait_for_timeout(300)
            at = page.evaluate("(id) => window.forgeEditor.graph.cy.getElementById(id).renderedPosition()", target)
        box = page.locator(".editor-graph-canvas").bounding_box()
        x, y = box["x"] + at["x"], box["y"] + at["y"]
        stop = self.tracing(page, "drag")
        with page.expect_response(lambda r: r.url.endswith("/placements") and r.request.method == "POST",
                                  timeout=60_000) as kept:
            page.mouse.move(x, y)
            page.mouse.down()
            for i in range(1, moves + 1):
                page.mouse.move(x + i * 3, y + i * 2)
            page.mouse.up()
        if kept.value.status != 200:
            raise RuntimeError(f"the drag's place was not kept: {kept.value.status}")
        page.wait_for_timeout(300)  # the frames after the drop are part of the drag
        drag_cpu = stop()
        dragged = page.evaluate("() => window.longTasks.splice(0)")
        line = next(k for k, t in enumerate(text.splitlines(), 1) if t == f"    command: go {n // 2}")
        page.evaluate(PANE_AT, line)
        page.wait_for_timeout(500)  # the pane drawn at the middle of the text, apart from the typing
        moved = page.evaluate("() => window.longTasks.splice(0)")
        stop = self.tracing(page, "typing")
        page.keyboard.type((TYPED * (keys // len(TYPED) + 1))[:keys], delay=40)
        page.wait_for_function("(length) => window.forgeEditor.state.checkedText.length === length"
                               " && document.getElementById('validity').dataset.state !== 'checking'",
                               arg=len(text) + keys, timeout=60_000)
        page.wait_for_timeout(500)  # the redraw of the last answer and the observer's report
        typing_cpu = stop()
        typed = page.evaluate("() => window.longTasks")
        page.context.close()
        return {"steps": n, "dragged": target, "moves": moves, "drag_long_tasks": len(dragged),
                "drag_longest_task_ms": round(max(dragged, default=0), 1), "keys": keys,
                "cursor_moved_longest_task_ms": round(max(moved, default=0), 1),
                "typing_long_tasks": len(typed), "typing_longest_task_ms": round(max(typed, default=0), 1),
                **({"traced": {"drag": drag_cpu, "typing": typing_cpu}} if self.trace else {})}


def bench_backend(backend: str, args, browser) -> dict:
    with deployed(f"forge-console-bench-{backend}-", BACKENDS[backend][0], on_error=log, test_timings=False) as dep:
        console = BenchConsole(dep, dep.workdir, args.port + args.backends.split(",").index(backend)
                               if args.port else None)
        bench, editor = Bench(console, browser), EditorBench(console, browser, args.trace)
        out = {"backend": backend, "load_before": round(os.getloadavg()[0], 2)}
        phases = {"latency": lambda: bench.latency(args.paced), "draw": lambda: bench.draw(args.big),
                  "burst": lambda: bench.responsiveness(args.burst), "server": lambda: bench.server(args.server_steps),
                  "editor_open": lambda: editor.open(args.editor_steps),
                  "editor_requests": lambda: editor.requests(args.editor_small, args.ops, args.keys),
                  "editor_tasks": lambda: editor.tasks(args.editor_steps, args.moves, args.keys)}
        for name in args.phases.split(","):
            out[name] = phases[name]()
            log(f"{backend} {name}: {out[name]}")
        out["load_after"] = round(os.getloadavg()[0], 2)
        return out


class BenchConsole(Console):
    """The test console, its daphne on `port` when given (else a free one)."""

    def __init__(self, deployment, shots: Path, port: int | None):
        self.fixed_port = port
        super().__init__(deployment, shots)

    def start_daphne(self) -> None:
        if self.fixed_port:
            self.port, self.url = self.fixed_port, f"http://127.0.0.1:{self.fixed_port}"
        super().start_daphne()


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
        if "editor_open" in r:
            print_editor_open(r["editor_open"])
        if "editor_requests" in r:
            print_editor_requests(r["backend"], r["editor_requests"])
        if "editor_tasks" in r:
            print_editor_tasks(r["editor_tasks"])


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


def components(browser) -> dict:
    """The editor's panes alone, for the causes of the figures above: bench/yaml_pane_bench.py and
    bench/editor_graph_bench.py (their test pages, no server)."""
    import editor_graph_bench
    import yaml_pane_bench

    return {"yaml_pane": yaml_pane_bench.measure(browser), "editor_graph": editor_graph_bench.measure(browser)}


def print_components(c: dict) -> None:
    lint, typed = c["yaml_pane"]["lint"], c["yaml_pane"]["typing"]
    print("\nThe editor's panes alone (bench/yaml_pane_bench.py, bench/editor_graph_bench.py; 0 = no task over 50 ms)")
    print(f"  YAML pane: schema lint a keystroke on {lint['steps']} steps p95 {lint['p95_ms']:.1f} ms "
          f"({verdict(lint['p95_ms'], 50)}); {typed['steps']} steps opened in {typed['open_s']:.2f} s (longest task "
          f"{typed['open_longest_task_ms']:.0f} ms), {typed['keys']} keys typed: longest task "
          f"{typed['typing_longest_task_ms']:.0f} ms")
    for g in c["editor_graph"]:
        print(f"  graph, {g['steps']} steps ({g['shape']}, {g['drawn']} nodes): shown in {g['open_ms']:.0f} ms, ELK "
              f"+{g['elk_ms']} ms, the same outline again {g['update_same_ms']:.0f} ms, one step more "
              f"{g['update_one_more_ms']:.0f} ms; longest task over three reshapes "
              f"{g['reshape_longest_task_ms'] or 0:.0f} ms, during a drag {g['drag_longest_task_ms'] or 0:.0f} ms")


def print_editor_open(o: dict) -> None:
    for shape, what in (("dag", "nothing folds"), ("lanes", "ten chains, folded")):
        first, again = o[f"{shape}_first"], o[f"{shape}_again"]
        print(f"  editor of a {o['steps']:,}-step workflow ({shape}: {what}; {first['nodes']} nodes drawn, "
              f"{'valid' if first['valid'] else 'NOT valid'}), navigation -> graph drawn, text shown, first "
              f"validation answered: {first['drawn_s']:.2f} s the first time "
              f"({verdict(first['drawn_s'], TARGETS['editor_open_s'])}), {again['drawn_s']:.2f} s again "
              f"({verdict(again['drawn_s'], TARGETS['editor_open_s'])}); ELK's layout at "
              f"{first['laid_out_s']:.2f} / {again['laid_out_s']:.2f} s; the first time: the HTML at "
              f"{first['html_ms']} ms, the draft's JSON asked at {first['draft_asked_ms']} ms and received at "
              f"{first['draft_received_ms']} ms, the longest task {first['open_longest_task_ms']:.0f} ms from "
              f"{first['longest_task_start_ms']} ms; again: {again['draft_asked_ms']}, {again['draft_received_ms']}, "
              f"{again['open_longest_task_ms']:.0f} ms from {again['longest_task_start_ms']} ms")


def print_editor_requests(backend: str, r: dict) -> None:
    patch, text = r["patch"], r["text"]
    limit = TARGETS["patch_p95_ms"].get(backend)
    patch_verdict = verdict(patch["p95_ms"], limit) if limit else "a target is set embedded only"
    kinds = "; ".join(f"{kind} p50 {k['p50_ms']:.0f}, p95 {k['p95_ms']:.0f}" for kind, k in patch["by_kind"].items())
    print(f"  patch round trip, {r['steps']}-step workflow, {patch['count']} ops: p50 {patch['p50_ms']:.0f} ms, "
          f"p95 {patch['p95_ms']:.0f} ms ({patch_verdict}), max {patch['max_ms']:.0f} ms ({kinds}); the endpoint's "
          f"own work (patch, validation, outline; no HTTP, no write) p50 {patch['server']['p50_ms']:.0f} ms, "
          f"p95 {patch['server']['p95_ms']:.0f} ms, of CPU p95 {patch['server_cpu']['p95_ms']:.0f} ms")
    print(f"  validation round trip while typing, {r['steps']}-step workflow, {text['count']} successive texts: "
          f"p50 {text['p50_ms']:.0f} ms, p95 {text['p95_ms']:.0f} ms "
          f"({verdict(text['p95_ms'], TARGETS['text_p95_ms'])}), max {text['max_ms']:.0f} ms; the endpoint's own "
          f"work p50 {text['server']['p50_ms']:.0f} ms, p95 {text['server']['p95_ms']:.0f} ms, of CPU p95 "
          f"{text['server_cpu']['p95_ms']:.0f} ms")


def print_editor_tasks(t: dict) -> None:
    limit = TARGETS["editor_task_ms"]
    print(f"  editor of a {t['steps']:,}-step workflow (every node drawn), longest main-thread task (0 = none over "
          f"50 ms): dragging a step {t['moves']} moves {t['drag_longest_task_ms']:.0f} ms "
          f"({verdict(t['drag_longest_task_ms'], limit)}; {t['drag_long_tasks']} over 50 ms); typing {t['keys']} "
          f"keys in the YAML {t['typing_longest_task_ms']:.0f} ms ({verdict(t['typing_longest_task_ms'], limit)}; "
          f"{t['typing_long_tasks']} over 50 ms), after the cursor was put in the middle of the text "
          f"(that took a task of {t['cursor_moved_longest_task_ms']:.0f} ms)")
    for what, d in t.get("traced", {}).items():  # --trace: how much of the longest task was the page's own work
        print(f"    traced {what}: longest task {d['wall_ms']:.0f} ms, of which {d['its_cpu_ms']:.0f} ms on the CPU "
              f"(the rest waiting for one); the most CPU of any task {d['most_cpu_ms']:.0f} ms")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="embedded,postgres")
    parser.add_argument("--paced", type=int, default=120, help="chained steps of the latency run (2 events each)")
    parser.add_argument("--big", type=int, default=1000, help="steps of the run whose view is drawn")
    parser.add_argument("--burst", type=int, default=500, help="parallel steps released at once")
    parser.add_argument("--phases", default=",".join(PHASES), help="which figures, in this order")
    parser.add_argument("--server-steps", type=int, default=1000, help="steps of the run the server time is read on")
    parser.add_argument("--editor-steps", type=int, default=1000, help="steps of the workflows opened in the editor")
    parser.add_argument("--editor-small", type=int, default=100, help="steps of the workflow patched and typed in")
    parser.add_argument("--ops", type=int, default=60, help="patches sent (field.set, edge.add, step.rename)")
    parser.add_argument("--keys", type=int, default=60, help="keys typed (texts sent, and keys in the pane)")
    parser.add_argument("--moves", type=int, default=60, help="pointer moves of the drag")
    parser.add_argument("--components", action="store_true",
                        help="also the editor's panes alone (bench/yaml_pane_bench.py, bench/editor_graph_bench.py)")
    parser.add_argument("--port", type=int, default=0, help="daphne's port (the next one for the second backend)")
    parser.add_argument("--trace", type=Path, default=None,
                        help="editor_tasks: write Chrome traces of the drag and the typing to this directory "
                             "(bench/long_tasks.py says what the long tasks were; tracing slows the page)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            results = [bench_backend(b, args, browser) for b in args.backends.split(",") if b]
            panes = components(browser) if args.components else None
        finally:
            browser.close()
    if args.json:
        print(json.dumps({"backends": results, "components": panes} if panes else results, indent=2))
    else:
        print_table(results)
        if panes:
            print_components(panes)
        print(f"\nbenchmark took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
