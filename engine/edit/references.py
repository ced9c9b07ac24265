"""Where a step refers to other steps, found with the engine's own parsers.

The same fields and the same rules as engine.validation's references (which
give a step its implicit dependencies): `depends_on`, `stdin`,
`inputs.*.from`, `condition`, `success_criteria`, `loop.until`, and the
`${...}` / `{{ ... }}` templates of `command`, `approval_message`, a review
loop's commands and `workflow_ref.args`. Each reference carries the offset
of its step id inside the field's value, so a rename rewrites exactly those
characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.expressions import RESERVED_ROOTS, ExpressionError, parse, parse_path, paths
from engine.templates import _MARKER, parse_template
from engine.validation import CRITERIA_LOCALS, UNTIL_LOCALS


@dataclass(frozen=True)
class Ref:
    """`target` is named at `offset` (None: the whole value, a depends_on item) of the value at `path`
    (a path inside the step); `via` names the field as the editor shows it."""

    target: str
    path: tuple
    offset: int | None
    via: str
    explicit: bool = False


def step_refs(raw: dict, ids) -> list[Ref]:
    """Every reference of one step (a mapping) to a step id in `ids` (or, for `$x` forms, to any id)."""
    out: list[Ref] = []
    if not isinstance(raw, dict):
        return out
    depends_on = raw.get("depends_on")
    if isinstance(depends_on, list):
        for k, dep in enumerate(depends_on):
            if isinstance(dep, str):
                out.append(Ref(dep, ("depends_on", k), None, "depends_on", True))
    if isinstance(raw.get("stdin"), str):
        _path_field(out, raw["stdin"], ("stdin",), "stdin", ids, dollar=True)
    inputs = raw.get("inputs")
    if isinstance(inputs, dict):
        for name, spec in inputs.items():
            if isinstance(spec, dict) and isinstance(spec.get("from"), str):
                _path_field(out, spec["from"], ("inputs", name, "from"), f"inputs.{name}.from", ids)
    if isinstance(raw.get("condition"), str):
        _expression(out, raw["condition"], ("condition",), "condition", ids, frozenset())
    criteria = raw.get("success_criteria")
    if isinstance(criteria, list):
        for k, text in enumerate(criteria):
            if isinstance(text, str):
                _expression(out, text, ("success_criteria", k), "success_criteria", ids, CRITERIA_LOCALS)
    loop = raw.get("loop")
    if isinstance(loop, dict) and isinstance(loop.get("until"), str):
        _expression(out, loop["until"], ("loop", "until"), "loop.until", ids, UNTIL_LOCALS)
    for key in ("command", "approval_message"):
        if isinstance(raw.get(key), str):
            _template(out, raw[key], (key,), key, ids)
    fix = loop.get("on_request_changes") if isinstance(loop, dict) else None
    if isinstance(fix, dict):
        for key in ("fix_command", "re_review_command"):
            if isinstance(fix.get(key), str):
                _template(out, fix[key], ("loop", "on_request_changes", key), f"loop.on_request_changes.{key}", ids)
    ref = raw.get("workflow_ref")
    if isinstance(ref, dict) and isinstance(ref.get("args"), dict):
        for name, value in ref["args"].items():
            if isinstance(value, str):
                _template(out, value, ("workflow_ref", "args", name), f"workflow_ref.args.{name}", ids)
    return out


def _is_step(path, ids, local: frozenset) -> bool:
    """engine.validation's rule: `$x...` always names a step; a bare `x...` when x is a step id (or its
    second segment is `outputs`), unless a local name or a reserved root shadows it."""
    root = path.segments[0]
    if not path.dollar and (root == "loop" or root in local or root in RESERVED_ROOTS):
        return False
    return bool(path.dollar or root in ids or (len(path.segments) >= 2 and path.segments[1] == "outputs"))


def _path_field(out: list, text: str, where: tuple, via: str, ids, dollar: bool = False) -> None:
    try:
        path = parse_path(text)
    except ExpressionError:
        return
    if dollar and (not path.dollar or len(path.segments) < 2):
        return
    if _is_step(path, ids, frozenset()):
        lead = len(text) - len(text.lstrip())
        out.append(Ref(str(path.segments[0]), where, lead + path.position + path.dollar, via))


def _expression(out: list, text: str, where: tuple, via: str, ids, local: frozenset) -> None:
    try:
        node = parse(text)
    except ExpressionError:
        return
    found = [path for path in paths(node) if _is_step(path, ids, local)]
    for path in sorted(found, key=lambda p: p.position):
        out.append(Ref(str(path.segments[0]), where, path.position + path.dollar, via))


def template_paths(source: str) -> list[tuple[int, Any]]:
    """Each path of a template with the offset of its first character in `source`, found by the same
    scan as engine.templates.parse_template (checked against it: the two never disagree)."""
    template = parse_template(source)  # raises ExpressionError like the engine does
    found: list[tuple[int, Any]] = []
    index = 0
    for match in _MARKER.finditer(source):
        if match.start() < index:
            continue
        if match.group() == "$${":
            index = match.end()
            continue
        closer = "}" if match.group() == "${" else "}}"
        end = source.find(closer, match.end())
        inner = source[match.end():end]
        path = parse_path(inner)
        found.append((match.end() + len(inner) - len(inner.lstrip()) + path.position, path))
        index = end + len(closer)
    if [p.text() for _, p in found] != [p.text() for p in template.paths]:
        raise ExpressionError("the template's paths could not be located")
    return found


def _template(out: list, text: str, where: tuple, via: str, ids) -> None:
    try:
        located = template_paths(text)
    except ExpressionError:
        return
    for offset, path in located:
        if _is_step(path, ids, frozenset()):
            out.append(Ref(str(path.segments[0]), where, offset + path.dollar, via))
