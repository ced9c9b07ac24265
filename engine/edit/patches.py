"""Typed patches of a workflow text (design 20 section 1): each is spliced into the text, never re-dumped."""

from __future__ import annotations

from typing import Any

from engine.edit import render
from engine.edit.checks import check_id, check_path, check_value, steps_required
from engine.edit.editor import Editor
from engine.edit.errors import PatchError, Patched, refused_not_raised
from engine.edit.inserting import expected_steps, insert_steps
from engine.edit.pasting import duplicate, paste
from engine.edit.references import step_refs
from engine.edit.rename import rename
from engine.edit.source import Source, collector_paused
from engine.edit.spans import descendants
from engine.edit.values import plain_copy
from engine.graph import CycleError, Graph

_KEYS = {
    "step.add": ({"step"}, {"after"}),
    "step.remove": ({"id"}, set()),
    "selection.remove": ({"ids"}, set()),
    "step.rename": ({"id", "to"}, set()),
    "step.duplicate": ({"id"}, set()),
    "edge.add": ({"from", "to"}, set()),
    "edge.remove": ({"from", "to"}, set()),
    "field.set": ({"id", "path", "value"}, set()),
    "field.unset": ({"id", "path"}, set()),
    "selection.paste": ({"yaml"}, {"after"}),
}


def apply_patch(text: str, op: dict) -> Patched:
    """Apply one patch to a workflow text.

    Returns:
        Patched: the new text, the CodeMirror changes from the old one, and ids a paste renamed.

    Raises:
        PatchError: the patch is malformed or cannot apply; nothing changes.
    """
    if not isinstance(op, dict):
        raise PatchError("bad_patch", "a patch must be a JSON object with an `op`")
    kind = op.get("op")
    if not isinstance(kind, str) or kind not in _KEYS:
        raise PatchError("bad_patch", f"unknown patch op {kind!r}; one of {', '.join(sorted(_KEYS))}")
    required, optional = _KEYS[kind]
    unknown = set(op) - required - optional - {"op"}
    if unknown:
        names = sorted(str(key)[:40] for key in unknown)
        more = f" and {len(names) - 5:,} more" if len(names) > 5 else ""
        raise PatchError("bad_patch", f"unknown key(s) in a {kind} patch: {', '.join(names[:5])}{more}")
    missing = required - set(op)
    if missing:
        raise PatchError("bad_patch", f"a {kind} patch needs {', '.join(sorted(missing))}")
    with collector_paused():
        return _apply_to(text, kind, op)


def _apply_to(text: str, kind: str, op: dict) -> Patched:
    with refused_not_raised():
        return _apply(Source(text), kind, op)


def _apply(source: Source, kind: str, op: dict) -> Patched:
    if kind == "selection.paste":
        return paste(source, op["yaml"], op.get("after"))
    if kind == "step.rename":
        return rename(source, op)
    if kind == "step.duplicate":
        return duplicate(source, op["id"])
    return _OPS[kind](source, op)


# -- field.set / field.unset ---------------------------------------------------


def _container(source: Source, step_id):
    """(node, value, path prefix) of the mapping a field path starts from: a step or the document."""
    if step_id is None:
        return source.root, ()
    steps_required(source)
    i = source.step_position(step_id)
    node = source.step_nodes[i]
    if node.kind != "map":
        raise PatchError("bad_path", f"step {step_id!r} is not a mapping")
    return node, ("steps", i)


def _nested(path: list, value: Any) -> Any:
    for part in reversed(path):
        if isinstance(part, int):
            if part != 0:
                raise PatchError("bad_path", "a new list starts at index 0")
            value = [value]
        else:
            value = {part: value}
    return value


def field_set(source: Source, op: dict) -> Patched:
    path = check_path(op["path"])
    value = check_value(op["value"])
    step_id = op["id"]
    _check_field_target(step_id, path)
    root, prefix = _container(source, step_id)
    editor = Editor(source)

    def finish() -> Patched:
        expected = plain_copy(source.value)
        _assign(expected, list(prefix) + path, plain_copy(value))
        return editor.finish(expected)

    node, parent, slot = root, None, None
    for k, part in enumerate(path):
        rest = path[k + 1:]
        if node.kind == "alias":  # reached through an alias: write this copy out, changed, in this place only
            plain = plain_copy(editor.value_at(editor.parents()[id(node)][2]))
            if not isinstance(plain, (dict, list)):
                raise PatchError("bad_path", f"{'.'.join(map(str, path[:k]))} holds a value, not a mapping")
            _assign(plain, path[k:], plain_copy(value), refuse=True)
            editor.replace(node, parent, slot, plain)
            return finish()
        if node.kind == "map" and isinstance(part, str):
            pair = node.get(part)
            if pair is None:
                if node is source.root and source.steps_pair is not None and not node.flow:
                    _insert_before_steps(source, editor, part, _nested(rest, value))
                else:
                    editor.add_entry(node, part, _nested(rest, value))
                return finish()
            parent, slot, node = node, pair, pair[1]
        elif node.kind == "seq" and isinstance(part, int):
            if part == len(node.items) and node.items:
                editor.append_item(node, _nested(rest, value))
                return finish()
            if part >= len(node.items):
                raise PatchError("bad_path", f"index {part} is past the end of the list")
            parent, slot, node = node, part, node.items[part]
        elif node.kind == "scalar" and node.value in ("", "~", "null", "Null", "NULL") and not node.style \
                and parent is not None:
            editor.replace(node, parent, slot, _nested(path[k:], value))
            return finish()
        else:
            where = ".".join(str(p) for p in path[:k]) or "the step"
            raise PatchError("bad_path", f"{where} has no place for {part!r}")
    editor.replace(node, parent, slot, value)
    return finish()


def _insert_before_steps(source: Source, editor: Editor, key: str, value: Any) -> None:
    """A new document field goes above `steps:`, with the other document fields."""
    steps_key = source.steps_pair[0]
    where = source.line_start(steps_key.start)
    position = source.root.items.index(source.steps_pair)
    floor = source.line_end(source.root.items[position - 1][1].content_end()) if position else 0
    while where > floor:  # above the comments that introduce the steps (not a block scalar's `#` lines)
        above = source.line_start(where - 1)
        if not source.text[above:where].strip(" \t\r\n").startswith("#"):
            break
        where = above
    column = source.column(steps_key.start)
    closed = source.after_deeper_comments(where, column) != where  # deeper comments would join a `|` block
    editor.splice(where, where, " " * column + render.entry(key, value, column, editor.layout, closed=closed))


def _check_field_target(step_id, path: list) -> None:
    if step_id is not None and not isinstance(step_id, str):
        raise PatchError("bad_patch", "`id` is a step id or null (the document)")
    if step_id is not None and path[0] == "id":
        raise PatchError("use_rename", "a step's id changes with step.rename, which also rewrites its references")
    if step_id is None and path[0] == "steps":
        raise PatchError("bad_path", "steps change with the step patches")


def _assign(target: Any, path: list, value: Any, refuse: bool = False) -> None:
    node = target
    for k, part in enumerate(path[:-1]):
        nxt = node[part] if (isinstance(node, dict) and part in node) or \
            (isinstance(node, list) and isinstance(part, int) and part < len(node)) else None
        if nxt is None or not isinstance(nxt, (dict, list)):
            if refuse and nxt is not None:
                raise PatchError("bad_path", f"{part!r} holds a value, not a mapping")
            nxt = {} if isinstance(path[k + 1], str) else []
            if isinstance(node, list) and part == len(node):
                node.append(nxt)
            else:
                node[part] = nxt
        node = nxt
    last = path[-1]
    if isinstance(node, list) and isinstance(last, int) and last == len(node):
        node.append(value)
    elif isinstance(node, list) and not isinstance(last, int):
        raise PatchError("bad_path", f"{last!r} is not an index of a list")
    elif isinstance(node, dict) and not isinstance(last, str):
        raise PatchError("bad_path", f"{last!r} is not a key of a mapping")
    else:
        node[last] = value


def field_unset(source: Source, op: dict) -> Patched:
    path = check_path(op["path"])
    step_id = op["id"]
    _check_field_target(step_id, path)
    root, prefix = _container(source, step_id)
    if not _exists(Editor(source).value_at(prefix), path):
        return source.unchanged()  # already absent: nothing to do
    editor = Editor(source)
    expected = plain_copy(source.value)
    _remove(expected, list(prefix) + path)
    node, parent, slot = root, None, None
    for k, part in enumerate(path):
        if node.kind == "alias":  # reached through an alias: this step gets its own copy, without the field
            plain = plain_copy(editor.value_at(editor.parents()[id(node)][2]))
            _remove(plain, path[k:])
            editor.replace(node, parent, slot, plain)
            return editor.finish(expected)
        if node.kind == "map":
            pair = node.get(part)
            parent, slot, node = node, pair, pair[1]
        else:
            parent, slot, node = node, part, node.items[part]
    if parent.kind == "map":
        if len(parent.items) == 1 and not parent.flow:
            grand = editor.parents()[id(parent)]
            if grand[0] is None:
                raise PatchError("bad_path", "the document cannot lose its last key")
            editor.replace(parent, grand[0], grand[1], {})
        else:
            editor.remove_entry(parent, slot)
    else:
        if len(parent.items) == 1 and not parent.flow:
            grand = editor.parents()[id(parent)]
            editor.replace(parent, grand[0], grand[1], [])
        else:
            editor.remove_items(parent, [slot])
    return editor.finish(expected)


def _exists(value: Any, path: list) -> bool:
    for part in path:
        if isinstance(value, dict) and isinstance(part, str) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and part < len(value):
            value = value[part]
        else:
            return False
    return True


def _remove(target: Any, path: list) -> None:
    node = target
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]


# -- edges -------------------------------------------------------------------


def dependencies(source: Source) -> dict[str, list]:
    """step id -> [(dependency id, Ref or "sequential")] for the steps with a valid first-held id."""
    ids = source.index
    deps: dict[str, list] = {step_id: [] for step_id in ids}
    previous = None
    sequential = source.value.get("sequential") is True
    for i, raw in enumerate(source.step_values):
        own = raw.get("id") if isinstance(raw, dict) else None
        if isinstance(own, str) and ids.get(own) == i:
            if sequential and previous is not None and "depends_on" not in raw:
                deps[own].append((previous, "sequential"))
            for ref in step_refs(raw, ids):
                if ref.target in ids and ref.target != own:
                    deps[own].append((ref.target, ref))
        if isinstance(raw, dict):
            previous = own if isinstance(own, str) and ids.get(own) == i else None
    return deps


def edge_add(source: Source, op: dict) -> Patched:
    steps_required(source)
    a, b = op["from"], op["to"]
    source.step_position(a)
    j = source.step_position(b)
    if a == b:
        raise PatchError("self_edge", f"a step cannot depend on itself ({a!r})")
    raw = source.step_values[j]
    depends_on = raw.get("depends_on")
    if isinstance(depends_on, list) and a in depends_on:
        return source.unchanged()
    deps = dependencies(source)
    graph = {k: [d for d, _ in v] for k, v in deps.items()}
    graph[b] = graph[b] + [a]
    try:
        Graph(graph).layers()
    except CycleError as exc:
        raise PatchError("cycle", f"{a} -> {b} would close a cycle: {' -> '.join(exc.cycle)}") from None
    editor = Editor(source)
    expected, steps = expected_steps(source)
    node = source.step_nodes[j]
    if node.kind != "map":
        raise PatchError("bad_path", f"step {b!r} is not a mapping")
    pair = node.get("depends_on")
    if pair is not None and pair[1].kind == "seq" and pair[1].items:
        editor.append_item(pair[1], a)
        steps[j]["depends_on"] = list(depends_on) + [a]
    else:
        new = list(depends_on) + [a] if isinstance(depends_on, list) else [a]  # an alias: written out, plus a
        if pair is None and source.value.get("sequential") is True and j > 0:
            previous = next((d for d, why in deps[b] if why == "sequential"), None)
            if previous is not None and previous != a:
                new = [previous, a]
        if pair is not None:
            editor.replace(pair[1], node, pair, _list_style(source, new))
        else:
            editor.add_entry(node, "depends_on", _list_style(source, new))
        steps[j]["depends_on"] = new
    return editor.finish(expected)


def _list_style(source: Source, value: list) -> Any:
    """A new depends_on is written as the file writes its others (one line, `[a, b]`, unless they are blocks)."""
    for node in source.step_nodes:
        pair = node.get("depends_on") if node.kind == "map" else None
        if pair is not None and pair[1].kind == "seq" and pair[1].items:
            return value if not pair[1].flow else render.FlowList(value)
    return render.FlowList(value)


def edge_remove(source: Source, op: dict) -> Patched:
    steps_required(source)
    a, b = op["from"], op["to"]
    source.step_position(a)
    j = source.step_position(b)
    raw = source.step_values[j]
    depends_on = raw.get("depends_on")
    if not (isinstance(depends_on, list) and a in depends_on):
        sources = [why for dep, why in dependencies(source).get(b, []) if dep == a]
        if sources:
            where = sorted({"`sequential: true` (it follows that step and has no depends_on)"
                            if why == "sequential" else f"`{why.via}`" for why in sources})
            raise PatchError("implicit_edge", f"{b} depends on {a} through {', '.join(where)}: the edge is implied, "
                             "so it goes when that changes, not as an edge")
        raise PatchError("bad_patch", f"there is no edge {a} -> {b}")
    editor = Editor(source)
    expected, steps = expected_steps(source)
    _drop_dependency(source, editor, j, {a}, steps)
    return editor.finish(expected)


def _drop_dependency(source: Source, editor: Editor, j: int, gone: set[str], steps: list) -> None:
    """Take the ids in `gone` out of step j's depends_on (the key goes when none is left)."""
    node = source.step_nodes[j]
    pair = node.get("depends_on")
    seq = pair[1]
    keep = [d for d in source.step_values[j]["depends_on"] if d not in gone]
    if seq.kind == "alias":
        editor.replace(seq, node, pair, keep)
        steps[j]["depends_on"] = keep
        return
    positions = [k for k, item in enumerate(seq.items) if item.kind == "scalar" and item.value in gone]
    if keep:
        editor.remove_items(seq, positions)
        steps[j]["depends_on"] = keep
    elif source.value.get("sequential") is True:
        editor.replace(seq, node, pair, [])  # an empty list, not no key: no key would chain it again
        steps[j]["depends_on"] = []
    else:
        editor.remove_entry(node, pair)
        del steps[j]["depends_on"]


# -- steps -------------------------------------------------------------------


def step_add(source: Source, op: dict) -> Patched:
    step = op["step"]
    if not isinstance(step, dict):
        raise PatchError("bad_patch", "`step` must be a mapping of fields")
    step_id = check_id(step.get("id"))
    check_value(step)
    if step_id in source.index:
        raise PatchError("duplicate_id", f"there is already a step {step_id!r}")
    step = {"id": step_id, **{k: v for k, v in step.items() if k != "id"}}
    return insert_steps(source, [step], op.get("after"))


def step_remove(source: Source, op: dict) -> Patched:
    return remove_steps(source, [op["id"]])


def selection_remove(source: Source, op: dict) -> Patched:
    """Several steps removed as one patch (one undo step for a Delete on a selection)."""
    ids = op["ids"]
    if not isinstance(ids, list) or not ids or len(ids) > MAX_REMOVED:
        raise PatchError("bad_patch", f"`ids` is a list of 1 to {MAX_REMOVED:,} step ids")
    return remove_steps(source, ids)


MAX_REMOVED = 10_000


def remove_steps(source: Source, ids: list) -> Patched:
    """Remove the steps `ids`: aliases elsewhere of their anchors are expanded first, the other steps' depends_on
    lose them, and each run of neighbouring removed steps goes as one span of lines (or of a flow list)."""
    steps_required(source)
    positions = sorted({source.step_position(step_id) for step_id in ids})
    gone = {source.step_values[i]["id"] for i in positions}
    removed = set(positions)
    editor = Editor(source)
    expected, steps = expected_steps(source)
    editor.remove_spans([source.item_span(i) for i in positions])
    anchored = [inner for i in positions for inner in descendants(source.step_nodes[i], keys=True)
                if inner.anchor is not None]
    for alias in editor.aliases_of(anchored):
        editor.expand(alias)
    for j, raw in enumerate(source.step_values):
        if j not in removed and isinstance(raw, dict) and isinstance(raw.get("depends_on"), list) and \
                gone.intersection(d for d in raw["depends_on"] if isinstance(d, str)) and \
                source.step_nodes[j].kind == "map":
            _drop_dependency(source, editor, j, gone, steps)
    count = len(source.step_nodes)
    if source.block_steps() and len(positions) == count:
        editor.splice(source.steps_pair[0].start, source.item_span(count - 1)[1], "steps: []" + source.newline)
    elif source.block_steps():
        for first, last in _runs(positions):
            start, end = source.item_span(first)[0], source.item_span(last)[1]
            if last + 1 < count:  # the blank lines that separate it from the next step go too
                end = source.item_span(last + 1)[0]
            else:  # the last steps: the blank lines before them go
                start = source.line_end(source.step_nodes[first - 1].content_end())
            editor.splice(start, end, "")
    else:
        items = source.steps_node.items
        if len(positions) == count:
            editor.splice(items[0].start, items[-1].end, "")
        for first, last in _runs(positions) if len(positions) < count else ():
            if last + 1 < count:
                editor.splice(items[first].start, items[last + 1].start, "")
            else:
                editor.splice(items[first - 1].end, items[last].end, "")
    for i in reversed(positions):
        del steps[i]
    return editor.finish(expected)


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Sorted positions as runs of neighbours: [1, 2, 3, 7] -> [(1, 3), (7, 7)]."""
    runs: list[list[int]] = []
    for i in positions:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [(a, b) for a, b in runs]


_OPS = {
    "step.add": step_add,
    "step.remove": step_remove,
    "selection.remove": selection_remove,
    "edge.add": edge_add,
    "edge.remove": edge_remove,
    "field.set": field_set,
    "field.unset": field_unset,
}
