"""step.rename: the id and every reference to it, found as the engine finds them, and nothing else.

A reference is rewritten in place: the characters of the old id inside the
scalar's text are replaced, so quoting, block style and the rest of the line
stay. When a scalar's text cannot be matched character for character to its
value (escapes), the scalar is rendered again in its style.
"""

from __future__ import annotations

import copy
import re

from engine.edit.checks import check_id, steps_required
from engine.edit.editor import Editor
from engine.edit.errors import PatchError, Patched
from engine.edit.references import Ref, step_refs
from engine.edit.source import Source
from engine.edit.spans import Node

_WORD = "A-Za-z0-9_"


def occurrences(text: str, word: str) -> list[int]:
    """Where `word` stands as a whole name (not inside a longer name)."""
    pattern = re.compile(rf"(?<![{_WORD}]){re.escape(word)}(?![{_WORD}])")
    return [m.start() for m in pattern.finditer(text)]


def rename(source: Source, op: dict) -> Patched:
    steps_required(source)
    old, new = op["id"], op["to"]
    i = source.step_position(old)
    check_id(new, "the new id")
    if new == old:
        return source.unchanged()
    if new in source.index:
        raise PatchError("duplicate_id", f"there is already a step {new!r}")
    editor = Editor(source)
    node = source.step_nodes[i]
    id_pair = node.get("id") if node.kind == "map" else None
    if id_pair is None:
        raise PatchError("bad_path", f"step {old!r} has its id where it cannot be rewritten")
    hits = reference_hits(source, {old: new})
    hits.setdefault(id(id_pair[1]), (id_pair[1], old, []))[2].append((None, old, new))
    expected = copy.deepcopy(source.value)  # shared as the text shares it: an anchored list changes for its aliases
    rewrite_all(editor, hits, expected)
    return editor.finish(expected, {old: new})


def reference_hits(source: Source, names: dict[str, str]) -> dict:
    """id(scalar node) -> (node, value, [(offset, old, new)]) for every reference to a renamed step."""
    hits: dict[int, tuple[Node, str, list]] = {}
    for j, raw in enumerate(source.step_values):
        if j >= len(source.step_nodes) or not isinstance(raw, dict):
            continue
        for ref in step_refs(raw, source.index):
            if ref.target not in names:
                continue
            target, value = _locate(source.step_nodes[j], raw, ref)
            if target is None:
                continue
            # the same place reached twice (through an alias) is one hit: _rewrite takes each once
            hits.setdefault(id(target), (target, value, []))[2].append((ref.offset, ref.target, names[ref.target]))
    return hits


def rewrite_all(editor: Editor, hits: dict, expected: dict) -> None:
    """Rewrite every hit and put the new values where the document reads them (aliases too)."""
    rewritten = {key: _rewrite(editor, editor.source, node, value, found)
                 for key, (node, value, found) in hits.items()}
    _apply_expected(editor, expected, rewritten)


def _locate(step: Node, raw: dict, ref: Ref) -> tuple[Node | None, str]:
    node, value = step, raw
    for part in ref.path:
        while node.kind == "alias":
            node = node.target
        if node.kind == "map" and isinstance(part, str):
            pair = node.get(part)
            if pair is None:
                return None, ""
            node = pair[1]
        elif node.kind == "seq" and isinstance(part, int) and part < len(node.items):
            node = node.items[part]
        else:
            return None, ""
        value = value[part]
    while node.kind == "alias":
        node = node.target
    return (node, value) if node.kind == "scalar" and isinstance(value, str) else (None, "")


def _rewrite(editor: Editor, source: Source, node: Node, value: str, hits: list) -> str:
    """Replace the old ids at the hits' offsets (None: the whole value) in the scalar's own characters."""
    chosen = sorted({(0 if offset is None else offset, old, new) for offset, old, new in hits}, reverse=True)
    new_value = _replaced(value, chosen)
    start = node.start
    if node.anchor is not None and source.text.startswith("&", start):
        start = start + 1 + len(node.anchor)
        while source.text[start] in " \t":
            start += 1
    if node.style in ("|", ">"):
        start = source.line_end(start)
    if node.style == '"':
        spans = _quoted_spans(source.text[start:node.end])
        if spans is not None and "".join(ch for ch, _, _ in spans) == value:  # the scalar, character by character
            for offset, old, _new in chosen:  # the id's characters (escaped or not) become the new id; the rest stays
                editor.splice(start + spans[offset][1], start + spans[offset + len(old) - 1][2], _new)
            return new_value
    splices = []
    # each name's places scanned once, not once per reference: one scalar may hold 100,000 of them
    located: dict[str, tuple[dict[int, int], list[int]] | None] = {}
    for offset, old, _new in chosen:
        if old not in located:
            value_at = occurrences(value, old)
            text_at = occurrences(source.text[start:node.end], old)
            located[old] = ({at: k for k, at in enumerate(value_at)}, text_at) if len(text_at) == len(value_at) \
                else None
        found = located[old]
        if found is None or offset not in found[0]:
            splices = None
            break
        at = start + found[1][found[0][offset]]
        splices.append((at, at + len(old), _new))
    if splices is not None:
        for splice in splices:
            editor.splice(*splice)
    else:  # escapes stand between the text and the value: write the scalar again, in its style
        parent, slot, _ = editor.parents()[id(node)]
        editor.replace(node, parent, slot, new_value, protect=False)
    return new_value


def _replaced(value: str, chosen: list) -> str:
    """The value with each (offset, old, new) of `chosen` (not overlapping) replaced, in one pass."""
    parts, index = [], 0
    for offset, old, new in sorted(chosen):
        parts += [value[index:offset], new]
        index = offset + len(old)
    parts.append(value[index:])
    return "".join(parts)


_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
            "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
            "L": "\u2028", "P": "\u2029"}
_HEX = {"x": 2, "u": 4, "U": 8}


def _quoted_spans(text: str) -> list[tuple[str, int, int]] | None:
    """A one-line double-quoted scalar's characters with where each is written ((char, start, end) offsets in
    `text`, which starts with its opening quote); None when it spans lines or is not one scalar."""
    if not text.startswith('"') or not text.endswith('"') or "\n" in text or "\r" in text:
        return None
    out: list[tuple[str, int, int]] = []
    i, end = 1, len(text) - 1
    while i < end:
        ch = text[i]
        if ch == '"':
            return None
        if ch != "\\":
            out.append((ch, i, i + 1))
            i += 1
            continue
        code = text[i + 1] if i + 1 < end else ""
        if code in _ESCAPES:
            out.append((_ESCAPES[code], i, i + 2))
            i += 2
        elif code in _HEX:
            digits = text[i + 2:i + 2 + _HEX[code]]
            if len(digits) != _HEX[code] or not all(c in "0123456789abcdefABCDEF" for c in digits) \
                    or int(digits, 16) > 0x10FFFF:
                return None
            out.append((chr(int(digits, 16)), i, i + 2 + len(digits)))
            i += 2 + len(digits)
        else:
            return None
    return out


def _apply_expected(editor: Editor, expected: dict, rewritten: dict[int, str]) -> None:
    """Every place that reads a rewritten scalar (itself, an alias of it, or a scalar inside an aliased
    collection) holds its new value."""
    stack: list = [(editor.source.root, ())]
    places = []
    while stack:
        node, path = stack.pop()
        while node is not None and node.kind == "alias":
            node = node.target
        if node is None:
            continue
        if node.kind == "map":
            stack.extend((pair[1], path + (pair[0].value,)) for pair in node.items)
        elif node.kind == "seq":
            stack.extend((child, path + (k,)) for k, child in enumerate(node.items))
        elif id(node) in rewritten and path:
            places.append((path, rewritten[id(node)]))
    for path, value in places:
        holder = expected
        for part in path[:-1]:
            holder = holder[part]
        holder[path[-1]] = value
