"""A page holding the editor's graph, palette and inspector alone (console/editor/editor_graph.js, palette.js,
inspector.js), served from a folder with the files it loads: what they ask (patches, selections, placements,
copies, pastes) is recorded in window.said, and a test or a benchmark draws the outlines (window.show). Used by
tests/browser/test_editor_graph_in_a_browser.py and bench/editor_graph_bench.py."""

from __future__ import annotations

import functools
import http.server
import json
import random
import shutil
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "forge" / "console" / "static" / "console"
VENDOR = ROOT / "static" / "vendor"

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>editor graph</title><link rel="icon" href="data:,">
<link rel="stylesheet" id="__________cytoscape_stylesheet" href="graph.css">
<link rel="stylesheet" href="editor/graph_edit.css">
<script src="vendor/cytoscape.min.js"></script><script src="vendor/elk-api.js"></script>
<script src="graph_groups.js"></script><script src="graph.js"></script></head>
<body><div id="palette"></div>
<main style="display:flex;gap:1rem"><div id="graph" data-elk-worker="vendor/elk-worker.min.js" style="width:900px;height:600px"></div>
<aside id="inspector" style="width:380px"></aside></main>
<script type="module" src="fixture.js"></script></body></html>
"""

# What the editor page does with the calls, minus the server: they are recorded; the test draws the outlines.
FIXTURE = """
import { createEditorGraph } from "./editor/editor_graph.js";
import { createInspector } from "./editor/inspector.js";
import { createPalette } from "./editor/palette.js";
const schema = await (await fetch("schema.json")).json();
const readOnly = new URLSearchParams(location.search).has("readonly");
const said = (window.said = { ops: [], selected: [], placed: [], copied: [], pastes: 0 });
let outline = { steps: [], edges: [] }, problems = {};
const stepOf = (id) => outline.steps.find((s) => s.id === id) || null;
const inspector = createInspector(document.getElementById("inspector"), { schema, readOnly, onPatch: (op) => said.ops.push(op), onSelect: (id) => graph.select(id) });
const palette = createPalette(document.getElementById("palette"), { schema, readOnly, onPatch: (op) => said.ops.push(op) });
const graph = createEditorGraph(document.getElementById("graph"), {
  readOnly, onPatch: (op) => said.ops.push(op), onPlace: (p) => said.placed.push(p), onCopy: (ids) => said.copied.push(ids),
  onPaste: () => { said.pastes += 1; },
  onSelect: (id) => { said.selected.push(id); palette.update(outline, id); inspector.show(stepOf(id), outline, problems[id] || []); },
});
window.show = (o, placements, p) => { outline = o; problems = p || {}; graph.update(o, placements || {}, problems); palette.update(o, null); };
window.graph = graph;
window.fixtureReady = true;
"""


def schema() -> dict:
    """The format's schema as the server serves it (engine/schema.py), with the console's completions."""
    try:
        from engine.schema import lobsterx_schema
        doc = lobsterx_schema()
    except ImportError:  # until engine/schema.py lands: the same pydantic model's schema
        from engine.model import Step
        step = Step.model_json_schema()
        doc = {"$defs": {**step.pop("$defs", {}), "Step": step}}
    doc["x-forge"] = {"completions": {"agents": ["mock", "shell"], "library": [], "expressions": []}}
    return doc


def serve_fixture(folder: Path):
    """The fixture page and the files it loads, served from `folder` on a free port; (url, server)."""
    shutil.copytree(STATIC / "editor", folder / "editor")
    for name in ("graph.js", "graph_groups.js", "graph.css"):
        shutil.copy(STATIC / name, folder / name)
    (folder / "vendor").mkdir()
    for path in (VENDOR / "cytoscape" / "cytoscape.min.js", VENDOR / "elkjs" / "elk-api.js", VENDOR / "elkjs" / "elk-worker.min.js"):
        shutil.copy(path, folder / "vendor" / path.name)
    (folder / "index.html").write_text(PAGE)
    (folder / "fixture.js").write_text(FIXTURE)
    (folder / "schema.json").write_text(json.dumps(schema()))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/index.html", server


def step(id_, kind="agent", agent=None, **fields):
    """A step as engine.edit.outline gives it."""
    return {"id": id_, "kind": kind, "agent": agent, "name": "", "lines": [1, 1],
            "fields": {"id": id_, **({"agent": agent} if agent else {}), **fields}}


def edge(a, b, explicit=True, via=("depends_on",)):
    return {"from": a, "to": b, "explicit": explicit, "via": list(via)}




def big_outline(n: int = 1000, shape: str = "dag", seed: int = 7) -> dict:
    """An outline of `n` steps: "dag" (each step after one or two of the 30 before it: nothing folds), "fan"
    (one step, a fan-out of n - 2, one step after all: folds into one group) or "lanes" (one step, then ten
    chains of (n - 1) // 10 steps: fold into ten groups)."""
    rng = random.Random(seed)
    if shape == "fan":
        mids = [f"b{i:04d}" for i in range(n - 2)]
        return {"parsed": True, "steps": [step("start", agent="mock"), *(step(i, agent="mock") for i in mids), step("end", agent="mock")],
                "edges": [edge("start", i) for i in mids] + [edge(i, "end") for i in mids]}
    if shape == "lanes":
        out = {"parsed": True, "steps": [step("start", agent="mock")], "edges": []}
        for lane in range(10):
            before = "start"
            for j in range((n - 1) // 10):
                sid = f"l{lane}_{j:03d}"
                out["steps"].append(step(sid, agent="mock"))
                out["edges"].append(edge(before, sid))
                before = sid
        return out
    ids = [f"s{i:04d}" for i in range(n)]
    out = {"parsed": True, "steps": [step(i, agent="mock") for i in ids], "edges": []}
    for k, sid in enumerate(ids[1:], 1):
        for d in sorted(set(rng.sample(ids[max(0, k - 30):k], min(k, rng.choice([1, 2]))))):
            out["edges"].append(edge(d, sid))
    return out
