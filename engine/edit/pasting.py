"""Copy and paste of steps as YAML text, and step.duplicate (a copy pasted after its original).

Copied text is the steps' own lines (their comments included), moved to
column 0, with the aliases whose anchors stay behind written out. A paste
renames ids that are taken (`x_2`, ...) and rewrites the references among
the pasted steps to match; pasted anchors are dropped (their aliases written
out), so an anchor of the pasted text can never capture an alias of the
document's.
"""

from __future__ import annotations


from engine.edit.checks import check_id, steps_required
from engine.edit.editor import Editor
from engine.edit.errors import PatchError, Patched, refused_not_raised
from engine.edit.inserting import insert_steps
from engine.edit.rename import reference_hits, rewrite_all
from engine.edit.source import WHITE, Source, blank, block_steps_loaded, bounded_load, collector_paused
from engine.edit.spans import descendants
from engine.edit.values import plain_copy

MAX_PASTE_STEPS = 1000


def copy_steps(text: str, ids: list[str]) -> str:
    """The steps `ids` (in document order) as a `- id: ...` block list at column 0, LF line endings."""
    with collector_paused(), refused_not_raised():
        return _copy(text, ids)


def _copy(text: str, ids: list[str]) -> str:
    if not isinstance(ids, list) or not ids:
        raise PatchError("bad_patch", "`ids` must list at least one step id")
    loaded = bounded_load(text)
    if not block_steps_loaded(text, loaded):  # refused before the node tree is built
        raise PatchError("unknown_step", "the document has no block list of steps to copy from")
    source = Source(text, loaded)
    if not source.block_steps():
        raise PatchError("unknown_step", "the document has no block list of steps to copy from")
    positions = sorted({source.step_position(step_id) for step_id in ids})
    spans = [source.item_span(i) for i in positions]
    editor = Editor(source)
    inside = []
    for i, span in zip(positions, spans):
        for current in descendants(source.step_nodes[i]):
            if current.kind == "alias" and not any(s <= current.target.start < e for s, e in spans):
                editor.expand(current)  # its anchor is not copied: the copy holds the value itself
        inside.append(span)
    if spans[-1][1] == len(source.text):
        editor.eof_break(len(source.text))  # the copy ends with a line break: a last `|` scalar must not take it
    editor.flush()
    blocks = []
    for start, end in spans:
        block = source.text[start:end]
        for s, e, new in sorted(editor.splices, reverse=True):
            if start <= s and e <= end:
                block = block[:s - start] + new + block[e - start:]
        blocks.append(_dedent(block.replace("\r\n", "\n"), source.dash_column()))
    return "".join(block if block.endswith("\n") else block + "\n" for block in blocks)


def _dedent(block: str, column: int) -> str:
    lines = block.split("\n")
    out = []
    for line in lines:
        strip = min(column, len(line) - len(line.lstrip(" ")))
        out.append(line[strip:])
    return "\n".join(out)


def _as_list(text: str) -> str:
    """The pasted text as a block list at column 0: a list as it is, one mapping made its single item."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    if not text.endswith("\n"):
        text += "\n"  # the pasted steps are read as they will stand: followed by more lines
    lines = text.split("\n")
    content = [line for line in lines if not blank(line) and not line.lstrip(WHITE).startswith("#")]
    if not content:
        raise PatchError("bad_patch", "there is nothing to paste")
    margin = min(len(line) - len(line.lstrip(" ")) for line in content)
    lines = [line[min(margin, len(line) - len(line.lstrip(" "))):] for line in lines]
    first = next(k for k, line in enumerate(lines) if not blank(line) and not line.lstrip(WHITE).startswith("#"))
    if lines[first].startswith(("[", "{")):
        raise PatchError("bad_patch", "paste a block list of steps (what Copy gives) or one step's mapping")
    if lines[first].startswith("-"):
        return "\n".join(lines)
    return "\n".join(lines[:first] + ["- " + lines[first]] + [("  " + line) if not blank(line) else line
                                                              for line in lines[first + 1:]])


def fresh_id(base: str, taken: set[str], suffix: str = "", tried: dict | None = None) -> str:
    """`base` + suffix, then `_2`, `_3`, ... until it is free (ids stay within 64 characters). `tried` keeps
    where each base's search stopped: `taken` only grows, so 1,000 pasted `x` next to `x_2`...`x_60000` do
    not each count from the start (10 s)."""
    first = tried.get((base, suffix), 1) if tried is not None else 1
    for n in range(first, 100_000):
        tail = suffix + ("" if n == 1 else f"_{n}")
        if not suffix and n == 1:
            continue
        candidate = base[:64 - len(tail)] + tail
        if candidate not in taken:
            if tried is not None:
                tried[(base, suffix)] = n + 1
            return candidate
    raise PatchError("duplicate_id", f"no free id near {base!r}")


def paste(source: Source, text, after, suffix: str = "") -> Patched:
    if not isinstance(text, str):
        raise PatchError("bad_patch", "`yaml` must be the text of the steps to paste")
    listed = "steps:\n" + _as_list(text)
    loaded = bounded_load(listed)  # the bounded loader sees the pasted text before anything else
    values = loaded.value["steps"] if isinstance(loaded.value.get("steps"), list) else []
    if len(values) > MAX_PASTE_STEPS:  # refused before the node tree is built
        raise PatchError("too_large", f"a paste holds at most {MAX_PASTE_STEPS:,} steps; this one has "
                         f"{len(values):,}: paste them in parts")
    if not values or not all(isinstance(v, dict) for v in values):
        raise PatchError("bad_patch", "paste a block list of step mappings (what Copy gives) or one step's mapping")
    wrapped = Source(listed, loaded)
    taken = set(source.index)
    tried: dict = {}
    names: dict[str, str] = {}
    ids_pasted: list[tuple[int, str, str]] = []
    for k, raw in enumerate(values):
        step_id = check_id(raw.get("id"), "a pasted step's id")
        new = step_id if step_id not in taken and not suffix else fresh_id(step_id, taken, suffix, tried)
        taken.add(new)
        names.setdefault(step_id, new)
        ids_pasted.append((k, step_id, new))
    editor = Editor(wrapped)
    wrapped.index = {**{step_id: k for k, step_id, _ in reversed(ids_pasted)}, **{
        i: -1 for i in source.index if i not in names}}
    changed = {old: new for old, new in names.items() if old != new}
    hits = reference_hits(wrapped, changed)
    for k, step_id, new in ids_pasted:
        if new != step_id:
            node = wrapped.step_nodes[k].get("id")[1]
            entry = hits.setdefault(id(node), (node, step_id, []))
            if (None, step_id, new) not in entry[2]:
                entry[2].append((None, step_id, new))
    expected = plain_copy(wrapped.value)
    for alias in descendants(wrapped.root):
        if alias.kind == "alias":
            editor.expand(alias)
    for node in descendants(wrapped.root, keys=True):
        if node.anchor is None or not wrapped.text.startswith("&", node.start):
            continue
        end = node.start + 1 + len(node.anchor)
        while end < len(wrapped.text) and wrapped.text[end] in " \t":
            end += 1
        editor.splice(node.start, end, "")
    rewrite_all(editor, hits, expected)
    for k, step_id, new in ids_pasted:  # a second copy of one id is renamed, not its references
        expected["steps"][k]["id"] = new
    editor.values = expected  # an alias of a list whose ids were renamed is written out renamed
    result = editor.finish(expected)
    pasted = bounded_load(result.text).value["steps"]
    block = result.text[len("steps:\n"):]
    renamed = {old: new for _, old, new in ids_pasted if old != new}
    return insert_steps(source, pasted, after, text=block, renamed=renamed)


def duplicate(source: Source, step_id) -> Patched:
    """A copy of the step right after it, with a fresh id (`x_copy`, `x_copy_2`, ...)."""
    steps_required(source)
    source.step_position(step_id)
    text = copy_steps(source.bom + source.text, [step_id])
    result = paste(source, text, step_id, suffix="_copy")
    result.renamed = {}
    return result
