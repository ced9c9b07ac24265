"""Steps written into the list of steps: rendered, or the text of a paste, in the file's own layout."""

from __future__ import annotations

from engine.edit import render
from engine.edit.checks import steps_required
from engine.edit.editor import Editor
from engine.edit.errors import Patched
from engine.edit.source import Source, blank
from engine.edit.values import plain_copy


def expected_steps(source: Source) -> tuple[dict, list]:
    value = plain_copy(source.value)
    return value, value.get("steps") if isinstance(value.get("steps"), list) else []


def insert_steps(source: Source, steps: list[dict], after, text: str | None = None,
                 renamed: dict | None = None) -> Patched:
    """Insert steps after `after` (or at the end): rendered, or `text` (a block list at column 0) when
    given."""
    if after is not None:
        steps_required(source)
        position = source.step_position(after) + 1
    else:
        position = len(source.step_values)
    editor = Editor(source)
    expected, values = expected_steps(source)
    if "steps" not in expected or not isinstance(expected.get("steps"), list):
        expected["steps"] = values = []
    values[position:position] = plain_copy(steps)
    nl = source.newline
    if source.block_steps() and source.step_nodes:
        dash, indent = source.dash_column(), source.item_indent()
        block = _indented(text, dash, nl) if text is not None else "".join(
            render.item(step, dash, indent, editor.layout) for step in steps)
        if source.blank_between_steps():
            block = nl + block.replace(nl + " " * dash + "-", nl + nl + " " * dash + "-") if text is None else \
                nl + block
        if 0 < position < len(source.step_nodes):  # before the next step and the comments above it
            where = source.after_deeper_comments(source.item_span(position)[0], dash)
            floor = source.line_end(source.step_nodes[position - 1].content_end())  # a `|+` keeps its blank lines
            while where > floor and blank(source.text[source.line_start(where - 1):where]):
                where = source.line_start(where - 1)  # the blank lines that separate the steps stay before it
        elif position:
            where = source.after_deeper_comments(
                source.line_end(source.step_nodes[position - 1].content_end()), dash)
        else:
            where = source.item_span(0)[0]
        if position == 0 and source.blank_between_steps():
            block = block[len(nl):] + nl
        block = editor.eof_break(where) + block
        editor.splice(where, where, block)
    elif source.steps_node is not None and source.steps_node.kind == "seq" and source.steps_node.items:
        seq = source.steps_node  # a one-line list of steps stays one line
        rendered = ", ".join(render.inline(step) for step in steps)
        at = seq.items[position - 1].end if position else seq.items[0].start
        editor.splice(at, at, ", " + rendered if position else rendered + ", ")
    else:
        block = _indented(text, 2, nl) if text is not None else "".join(
            render.item(step, 2, 2, editor.layout) for step in steps)
        if source.steps_pair is not None:
            key, value = source.steps_pair
            end = value.end if value.kind != "seq" or value.flow else value.content_end()
            editor.splice(key.start, source.line_end(end), "steps:" + nl + block)
        else:
            lead = "" if not source.text or source.text.endswith("\n") else nl
            editor.splice(len(source.text), len(source.text), lead + "steps:" + nl + block)
    return editor.finish(expected, renamed)


def _indented(text: str, column: int, nl: str) -> str:
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "".join((" " * column + line if not blank(line) else "") + nl for line in lines)
