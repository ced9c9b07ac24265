"""The outline of any text: the graph the editor draws, from the engine's bounded loader. Never raises.

Values and line numbers come from engine.yamlload (C-backed, with positions),
edges from the same references engine.validation turns into dependencies, so
the graph shows what a run would do even while the text has other problems.
"""

from __future__ import annotations

import re

from engine.edit.references import step_refs
from engine.edit.source import WHITE, blank, collector_paused
from engine.edit.values import json_safe
from engine.validation import STEP_ID
from engine.yamlload import Loaded, YamlLoadError, load

_LONE_DASH = re.compile(r"-([ \t]+#.*)?")


def outline(text: str, loaded: Loaded | None = None) -> dict:
    """{"parsed", "error", "sequential", "name", "steps": [...], "edges": [...]} (design 20, section 1).
    `loaded`: `load(text)`, when the caller has it already."""
    try:
        with collector_paused():
            return _outline(text, loaded)
    except YamlLoadError as exc:
        problem = exc.problem
        return _unparsed(problem.code, problem.message, problem.line, problem.column)
    except Exception as exc:  # noqa: BLE001 - the contract: any text gives an outline, never a 500 while typing
        return _unparsed("yaml_error", f"the text could not be read: {type(exc).__name__}", None, None)


def _unparsed(code: str, message: str, line, column) -> dict:
    return {"parsed": False, "error": {"code": code, "message": message, "line": line, "column": column},
            "sequential": False, "name": None, "steps": [], "edges": []}


def kind_of(raw: dict) -> str:
    if isinstance(raw.get("loop"), dict):
        return "loop"
    if raw.get("approval") is not None:
        return "approval"
    if raw.get("workflow_ref") is not None:
        return "subworkflow"
    if raw.get("library_step") is not None:
        return "library"
    return "agent"


def _outline(text: str, loaded: Loaded | None) -> dict:
    if not isinstance(text, str):
        return _unparsed("yaml_error", "the text must be a string", None, None)
    loaded = loaded if loaded is not None else load(text)
    root = loaded.value
    name = root.get("name") if isinstance(root.get("name"), str) else None
    sequential = root.get("sequential") is True
    steps = root.get("steps") if isinstance(root.get("steps"), list) else []
    ids: dict[str, int] = {}
    for i, raw in enumerate(steps):
        if isinstance(raw, dict):
            step_id = raw.get("id")
            if isinstance(step_id, str) and STEP_ID.fullmatch(step_id) and step_id != "loop" and step_id not in ids:
                ids[step_id] = i
    lines = text.split("\n")
    boundaries = _boundaries(loaded, root, steps, lines)
    nodes, edges = [], {}
    previous = None
    for i, raw in enumerate(steps):
        if not isinstance(raw, dict):
            continue
        own = raw.get("id")
        owner = isinstance(own, str) and ids.get(own) == i
        if owner:
            first = _with_dash(lines, loaded.position(("steps", i))[0] or 1)
            last = max(first, boundaries[i] - 1)
            while last > first and (blank(lines[last - 1]) or lines[last - 1].lstrip(WHITE).startswith("#")):
                last -= 1
            agent = raw.get("agent")
            nodes.append({"id": own, "kind": kind_of(raw), "agent": agent if isinstance(agent, str) else None,
                          "name": raw["name"] if isinstance(raw.get("name"), str) else "",
                          "lines": [first, last], "fields": json_safe(raw)})
            if sequential and previous is not None and "depends_on" not in raw:
                _edge(edges, previous, own, "sequential", False)
            for ref in step_refs(raw, ids):
                if ref.target in ids and ref.target != own:
                    _edge(edges, ref.target, own, ref.via, ref.explicit)
        previous = own if owner else None
    return {"parsed": True, "error": None, "sequential": sequential, "name": name, "steps": nodes,
            "edges": list(edges.values())}


def _with_dash(lines: list[str], first: int) -> int:
    """A step whose dash stands on a line of its own (`-` then its keys below) starts at that dash."""
    if first > 1 and not lines[first - 1].lstrip(WHITE).startswith("-") \
            and _LONE_DASH.fullmatch(lines[first - 2].strip(WHITE + "\r")):
        return first - 1
    return first


def _boundaries(loaded, root: dict, steps: list, lines: list[str]) -> list[int]:
    """For each step, the line where the next thing starts (the next step, the next document key, or
    past the end)."""
    keys = list(root)
    after = len(lines) + 1
    if "steps" in keys and keys.index("steps") + 1 < len(keys):
        after = loaded.position((keys[keys.index("steps") + 1],), key=True)[0] or after
    starts = [loaded.position(("steps", i))[0] for i in range(len(steps))]
    starts = [_with_dash(lines, start) if start else start for start in starts]
    out = []
    for i in range(len(steps)):
        nxt = starts[i + 1] if i + 1 < len(steps) and starts[i + 1] else after
        out.append(nxt)
    return out


def _edge(edges: dict, source: str, target: str, via: str, explicit: bool) -> None:
    edge = edges.get((source, target))
    if edge is None:
        edge = edges[(source, target)] = {"from": source, "to": target, "explicit": False, "via": []}
    edge["explicit"] = edge["explicit"] or explicit
    if via not in edge["via"]:
        edge["via"].append(via)
