"""Bounded, position-keeping YAML loading for .lobsterX documents.

PyYAML's composer is recursive and its resolver is YAML 1.1 (`yes` becomes
True), so this module composes the document itself from the parser's event
stream: it enforces the size, depth and alias bounds before anything is
built, reads scalars by the YAML 1.2 core schema, rejects duplicate keys and
explicit tags, and records the 1-based line and column of every node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from engine.problems import Problem

MAX_BYTES = 1_048_576
MAX_DEPTH = 64
MAX_ALIAS_NODES = 10_000

_Parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"^[-+]?[0-9]+$")
_OCT = re.compile(r"^0o[0-7]+$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")

Path = tuple


@dataclass
class Loaded:
    """A loaded document: plain Python values plus where each node came from.

    `positions[path]` is the (line, column) of the value at `path` (a tuple of
    mapping keys and list indexes); `key_positions[path]` is that of the key
    that introduced it. Nodes reached through an alias are not listed; use
    `position()` which falls back to the nearest listed ancestor.
    """

    value: Any
    positions: dict[Path, tuple[int, int]] = field(default_factory=dict)
    key_positions: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def position(self, path: Path, *, key: bool = False) -> tuple[int | None, int | None]:
        table = self.key_positions if key else self.positions
        path = tuple(path)
        if path in table:
            return table[path]
        while path:
            path = path[:-1]
            if path in self.positions:
                return self.positions[path]
        return (None, None)


class YamlLoadError(Exception):
    """The bytes are not one acceptable YAML document; `problem` says why and where."""

    def __init__(self, problem: Problem):
        self.problem = problem
        super().__init__(problem.message)


def _fail(code: str, message: str, mark=None) -> YamlLoadError:
    line = column = None
    if mark is not None:
        line, column = mark.line + 1, mark.column + 1
    return YamlLoadError(Problem(code, message, None, line, column))


def resolve_plain(text: str) -> Any:
    """Read a plain (unquoted) scalar by the YAML 1.2 core schema."""
    if _NULL.match(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    try:
        if _INT.match(text):
            return int(text, 10)
        if _OCT.match(text):
            return int(text[2:], 8)
        if _HEX.match(text):
            return int(text[2:], 16)
    except ValueError:  # more digits than Python converts; keep the text
        return text
    if _FLOAT.match(text):
        return float(text)
    if _INF.match(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.match(text):
        return float("nan")
    return text


def decode(data: bytes | str, max_bytes: int = MAX_BYTES) -> str:
    """Check the size bound on the raw bytes, then decode strict UTF-8."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise _fail("too_large", f"the document is {len(raw):,} bytes; the limit is {max_bytes:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise YamlLoadError(Problem(
            "yaml_error", f"the document is not valid UTF-8 (byte {exc.start})", None, line, column)) from None
    return text[1:] if text.startswith("\ufeff") else text


class _Frame:
    __slots__ = ("container", "path", "anchor", "size", "height", "key", "key_mark", "is_map")

    def __init__(self, container, path, anchor, is_map):
        self.container = container
        self.path = path
        self.anchor = anchor
        self.size = 1
        self.height = 1
        self.key = _NO_KEY
        self.key_mark = None
        self.is_map = is_map


_NO_KEY = object()


def load(data: bytes | str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH,
         max_alias_nodes: int = MAX_ALIAS_NODES) -> Loaded:
    """Load one YAML document within the bounds.

    Args:
        data: the raw document (bytes are checked as UTF-8).
        max_bytes: size bound, checked before parsing.
        max_depth: deepest nesting of mappings and sequences, aliases included.
        max_alias_nodes: nodes that alias expansion may add in all.

    Returns:
        The loaded document with node positions.

    Raises:
        YamlLoadError: with a `yaml_error`, `too_large`, `too_deep`,
            `alias_limit` or `not_a_mapping` problem.
    """
    text = decode(data, max_bytes)
    loaded = Loaded(None)
    stack: list[_Frame] = []
    anchors: dict[str, tuple[Any, int, int]] = {}  # name -> (value, size, height)
    alias_nodes = 0
    documents = 0
    root_set = False
    try:
        for event in yaml.parse(text, Loader=_Parser):
            kind = type(event)
            if kind is yaml.ScalarEvent or kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                if event.tag is not None:
                    raise _fail("yaml_error", f"explicit tags such as {event.tag!r} are not allowed",
                                event.start_mark)
            if kind is yaml.ScalarEvent:
                if event.implicit[0]:
                    value = resolve_plain(event.value)
                else:
                    value = event.value
                if event.anchor is not None:
                    anchors[event.anchor] = (value, 1, 0)
                root_set = _place(loaded, stack, value, 1, 0, event.start_mark, root_set)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                if len(stack) + 1 > max_depth:
                    raise _fail("too_deep", f"the document nests deeper than {max_depth} levels",
                                event.start_mark)
                is_map = kind is yaml.MappingStartEvent
                if stack and stack[-1].is_map and stack[-1].key is _NO_KEY:
                    raise _fail("yaml_error", "a mapping key must be a plain value, not a "
                                + ("mapping" if is_map else "list"), event.start_mark)
                path = _child_path(stack)
                frame = _Frame({} if is_map else [], path, event.anchor, is_map)
                loaded.positions[path] = (event.start_mark.line + 1, event.start_mark.column + 1)
                stack.append(frame)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                frame = stack.pop()
                if frame.anchor is not None:
                    anchors[frame.anchor] = (frame.container, frame.size, frame.height)
                root_set = _place(loaded, stack, frame.container, frame.size, frame.height,
                                  None, root_set, registered=True)
            elif kind is yaml.AliasEvent:
                if event.anchor not in anchors:
                    raise _fail("yaml_error", f"unknown alias *{event.anchor}", event.start_mark)
                value, size, height = anchors[event.anchor]
                alias_nodes += size
                if alias_nodes > max_alias_nodes:
                    raise _fail("alias_limit", f"aliases expand to more than {max_alias_nodes:,} nodes",
                                event.start_mark)
                if len(stack) + height > max_depth:
                    raise _fail("too_deep", f"the document nests deeper than {max_depth} levels "
                                "once its aliases are expanded", event.start_mark)
                root_set = _place(loaded, stack, value, size, height, event.start_mark, root_set)
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _fail("yaml_error", "the file holds more than one YAML document",
                                event.start_mark)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = exc.problem or str(exc)
        raise _fail("yaml_error", f"YAML syntax error: {reason}", mark) from None
    except yaml.YAMLError as exc:
        raise _fail("yaml_error", f"YAML error: {exc}") from None
    if not root_set or loaded.value is None:
        raise _fail("not_a_mapping", "the document is empty; it must be a mapping with `name` and `steps`")
    if not isinstance(loaded.value, dict):
        kind = "a list" if isinstance(loaded.value, list) else "a single value"
        raise YamlLoadError(Problem("not_a_mapping", f"the document is {kind}; it must be a mapping "
                                    "with `name` and `steps`", None, *loaded.position(())))
    return loaded


def _child_path(stack: list[_Frame]) -> Path:
    if not stack:
        return ()
    parent = stack[-1]
    if parent.is_map:
        return parent.path + (parent.key,)
    return parent.path + (len(parent.container),)


def _place(loaded: Loaded, stack: list[_Frame], value, size: int, height: int, mark, root_set: bool,
           registered: bool = False) -> bool:
    """Put a finished node into its parent (or make it the root)."""
    if not stack:
        if mark is not None:
            loaded.positions[()] = (mark.line + 1, mark.column + 1)
        loaded.value = value
        return True
    parent = stack[-1]
    parent.size += size
    if height + 1 > parent.height:
        parent.height = height + 1
    if parent.is_map:
        if parent.key is _NO_KEY:
            try:
                hash(value)
            except TypeError:
                raise _fail("yaml_error", "a mapping key must be a plain value", mark) from None
            if value in parent.container:
                first = loaded.key_positions.get(parent.path + (value,))
                where = f" (first at line {first[0]})" if first else ""
                raise _fail("yaml_error", f"duplicate key {value!r}{where}", mark)
            parent.key = value
            parent.key_mark = mark
            return root_set
        path = parent.path + (parent.key,)
        if parent.key_mark is not None:
            loaded.key_positions[path] = (parent.key_mark.line + 1, parent.key_mark.column + 1)
        if mark is not None and not registered:
            loaded.positions[path] = (mark.line + 1, mark.column + 1)
        parent.container[parent.key] = value
        parent.key = _NO_KEY
        parent.key_mark = None
    else:
        if mark is not None and not registered:
            loaded.positions[parent.path + (len(parent.container),)] = (mark.line + 1, mark.column + 1)
        parent.container.append(value)
    return root_set
