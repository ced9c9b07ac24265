"""Text for the nodes a patch writes, rendered by ruamel.yaml in the file's own indentation.

Only new or changed nodes are rendered here; everything else keeps its
characters. Rendered lines carry no indentation of their own place: the
caller prefixes them, so a block lands at the column its neighbours use.
"""

from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedSeq
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

from engine.edit.values import plain_copy, same
from engine.yamlload import YamlLoadError, load


@dataclass(frozen=True)
class Layout:
    """A file's indentation habits: nested mappings, and a key's block list dashes (offset from the key)."""

    map_indent: int = 2
    seq_offset: int = 2
    newline: str = "\n"


_local = threading.local()  # a ruamel YAML object holds state while it dumps: one per thread


def _dumper(map_indent: int, seq_offset: int, flow: bool) -> YAML:
    cache = _local.__dict__.setdefault("dumpers", {})
    key = (map_indent, seq_offset, flow)
    if key not in cache:
        cache[key] = _new_dumper(map_indent, seq_offset, flow)
    return cache[key]


def _new_dumper(map_indent: int, seq_offset: int, flow: bool) -> YAML:
    yaml = YAML()
    yaml.width = 1 << 20  # never fold a long line: the user wrote it on one line
    yaml.indent(mapping=map_indent, sequence=seq_offset + 2, offset=seq_offset)
    if flow:
        yaml.default_flow_style = True
    return yaml


def _dump(data: Any, layout: Layout, flow: bool = False) -> str:
    out = io.StringIO()
    try:
        _dumper(layout.map_indent, layout.seq_offset, flow).dump(data, out)
    except Exception:
        _local.__dict__.pop("dumpers", None)  # a dump that failed half-way leaves its YAML object unusable
        raise
    return out.getvalue()


def _printable(text: str) -> bool:
    return all(ch == "\n" or ch == "\t" or (ch >= " " and ch != "\x7f" and not 0x80 <= ord(ch) < 0xa0
                                              and ch not in "\ufeff\ufffe\uffff") for ch in text)


class FlowList(list):
    """A list to be written on one line: `[a, b]`."""


def prepare(value: Any, block_style: str = "") -> Any:
    """Plain values for ruamel: a multi-line string becomes a `|` block (or `>` when it was one)."""
    if isinstance(value, str):
        lines = value.split("\n")
        if ("\n" in value.rstrip("\n") or block_style) and value.strip("\n") and _printable(value) \
                and not any(line != line.rstrip(" \t") for line in lines) and not value.startswith((" ", "\t")):
            return FoldedScalarString(value) if block_style == ">" and "\n" not in value.rstrip("\n") \
                else LiteralScalarString(value)
        return value
    if isinstance(value, dict):
        return {str(k): prepare(v) for k, v in value.items()}
    if isinstance(value, FlowList):
        seq = CommentedSeq(value)
        seq.fa.set_flow_style()
        return seq
    if isinstance(value, (list, tuple)):
        return [prepare(v) for v in value]
    return value


def closed_tail(value: Any) -> Any:
    """A prepared value whose last line is not a `|`/`>` block scalar's: text inserted before comment lines
    indented deeper than it (those lines would be read as the block scalar's text) ends with a quoted string."""
    if isinstance(value, (LiteralScalarString, FoldedScalarString)):
        return str(value)
    if isinstance(value, dict) and value:
        last = next(reversed(value))
        return {**value, last: closed_tail(value[last])}
    if isinstance(value, list) and not isinstance(value, CommentedSeq) and value:
        return value[:-1] + [closed_tail(value[-1])]
    return value


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def entry(key: str, value: Any, column: int, layout: Layout, block_style: str = "", closed: bool = False) -> str:
    """`key: value` for a block mapping whose keys are at `column`; the first line carries no indentation
    (it is placed at the key's column), the others do. Ends with a newline. `closed`: see closed_tail."""
    prepared = prepare(value, block_style)
    lines = _lines(_dump({key: closed_tail(prepared) if closed else prepared}, layout))
    pad = " " * column
    return layout.newline.join([lines[0]] + [pad + line if line else line for line in lines[1:]]) + layout.newline


def item(mapping: dict, dash_column: int, item_indent: int, layout: Layout) -> str:
    """`- key: ...` for a block list whose dashes are at `dash_column`, every line indented. Ends with a
    newline."""
    lines = _lines(_dump(prepare(mapping), layout))
    first = " " * dash_column + "-" + " " * (item_indent - 1)
    pad = " " * (dash_column + item_indent)
    out = [first + lines[0]] + [pad + line if line else line for line in lines[1:]]
    return layout.newline.join(out) + layout.newline


def sequence_item(value: Any, dash_column: int, layout: Layout, closed: bool = False) -> str:
    """`- value` for a key's block list (an item of `depends_on`, `success_criteria`, ...)."""
    prepared = prepare(value)
    lines = _lines(_dump([closed_tail(prepared) if closed else prepared], Layout(layout.map_indent, 0,
                                                                                 layout.newline)))
    pad = " " * dash_column
    return layout.newline.join(pad + line if line else line for line in lines) + layout.newline


def inline(value: Any) -> str:
    """One line of YAML for a value, safe in block and flow context: `a`, `'a: b'`, `[a, b]`, `{x: 1}`."""
    value = plain_copy(value)  # a FlowList anywhere inside is a plain list here (one line anyway)
    text = _dump({"k": value}, Layout(), flow=True).rstrip("\n")
    if not (text.startswith("{k: ") and text.endswith("}")) or "\n" in text:
        raise ValueError("the value does not fit on one line")
    text = text[4:-1]
    if not _reads_back(text, value):
        text = json.dumps(value, ensure_ascii=False)  # JSON is YAML: for what ruamel writes wrong (`[:>]`)
        if not _reads_back(text, value):
            raise ValueError("the value cannot be written on one line")
    return text


def _reads_back(text: str, value: Any) -> bool:
    try:  # in block and in flow context
        return same(load("k: " + text).value["k"], value) and same(load("k: [" + text + "]").value["k"], [value])
    except YamlLoadError:
        return False


def scalar_like(value: Any, style: str) -> str:
    """A scalar in the quoting its old value had, when it can be written so; else as ruamel writes it."""
    if isinstance(value, str) and "\n" not in value and _printable(value):
        if style == "'":
            return "'" + value.replace("'", "''") + "'"
        if style == '"':
            return json.dumps(value, ensure_ascii=False)
    return inline(value)
