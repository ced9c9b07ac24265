"""Bounded, position-keeping YAML loading for .lobsterX documents.

PyYAML's composer is recursive and its resolver is YAML 1.1 (`yes` becomes
True), so this module composes the document itself from the parser's event
stream: it enforces the size, depth and alias bounds before anything is
built, reads scalars by the YAML 1.2 core schema, rejects duplicate keys and
explicit tags, and records the 1-based line and column of every node.
"""

from __future__ import annotations

import re
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
_MAX_INT_CHARS = 3000  # 3,000 hex digits stay under Python's 4,300-digit int-to-text limit


class Loaded:
    """A loaded document: plain Python values plus where each node came from.

    `position(path)` gives the 1-based (line, column) of the value at `path`
    (a tuple of mapping keys and list indexes), or with `key=True` of the key
    that introduced it; a path that does not exist falls back to its nearest
    existing ancestor. Marks are kept per container, so loading allocates
    nothing per node for them. `nul_paths` lists the strings (and, ending in
    "@key", the keys) that hold a NUL character.
    """

    def __init__(self):
        self.value: Any = None
        self.root_mark = None
        self.marks: dict[int, tuple[Any, Any]] = {}  # id(container) -> (value marks, key marks)
        self.nul_paths: list[Path] = []

    def position(self, path: Path, *, key: bool = False) -> tuple[int | None, int | None]:
        best = self.root_mark
        node = self.value
        path = tuple(path)
        for depth, segment in enumerate(path):
            entry = self.marks.get(id(node))
            if entry is None:
                break
            value_marks, key_marks = entry
            try:
                if key and depth == len(path) - 1 and key_marks is not None:
                    best = key_marks[segment]
                    break
                best = value_marks[segment]
                node = node[segment]
            except (KeyError, IndexError, TypeError):
                break
        return (None, None) if best is None else (best.line + 1, best.column + 1)


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


_SPECIAL_START = frozenset("0123456789+-.~nNtTfF")


def resolve_plain(text: str) -> Any:
    """Read a plain (unquoted) scalar by the YAML 1.2 core schema."""
    if not text:
        return None
    if text[0] not in _SPECIAL_START:
        return text  # most scalars: words and sentences, no regex needed
    if text.isdigit() and text.isascii() and len(text) <= _MAX_INT_CHARS:
        return int(text)  # plain decimal digits ("017" is 17)
    if _NULL.match(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    if len(text) <= _MAX_INT_CHARS:  # a longer literal stays text: Python will not print it back
        if _INT.match(text):
            return int(text, 10)
        if _OCT.match(text):
            return int(text[2:], 8)
        if _HEX.match(text):
            return int(text[2:], 16)
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
    __slots__ = ("container", "path", "anchor", "size", "height", "key", "is_map", "marks", "key_marks")

    def __init__(self, container, path, anchor, is_map):
        self.container = container
        self.path = path
        self.anchor = anchor
        self.size = 1
        self.height = 0
        self.key = _NO_KEY
        self.is_map = is_map
        self.marks = {} if is_map else []
        self.key_marks = {} if is_map else None


_NO_KEY = object()
_SCALAR, _ALIAS = yaml.ScalarEvent, yaml.AliasEvent
_MAP_START, _SEQ_START = yaml.MappingStartEvent, yaml.SequenceStartEvent
_MAP_END, _SEQ_END = yaml.MappingEndEvent, yaml.SequenceEndEvent


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
    loaded = Loaded()
    try:
        _compose(text, loaded, max_depth, max_alias_nodes)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = exc.problem or str(exc)
        if "maximum nesting depth" in reason:  # libyaml 0.2.6+ stops deep flow collections before our count does
            raise _fail("too_deep", f"the document nests deeper than {max_depth} levels", mark) from None
        raise _fail("yaml_error", f"YAML syntax error: {reason}", mark) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        what = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        raise YamlLoadError(Problem("yaml_error", f"character {what} is not allowed in YAML ({exc.reason})",
                                    None, line, column)) from None
    except yaml.YAMLError as exc:
        raise _fail("yaml_error", f"YAML error: {exc}") from None
    if loaded.value is None:
        raise _fail("not_a_mapping", "the document is empty; it must be a mapping with `name` and `steps`")
    if not isinstance(loaded.value, dict):
        kind = "a list" if isinstance(loaded.value, list) else "a single value"
        raise YamlLoadError(Problem("not_a_mapping", f"the document is {kind}; it must be a mapping "
                                    "with `name` and `steps`", None, *loaded.position(())))
    return loaded


def _compose(text: str, loaded: Loaded, max_depth: int, max_alias_nodes: int) -> None:
    """Build the document from parser events; one loop, no recursion (the hot path of validation).

    Subtree sizes and heights are only needed to account for aliases, so they
    are tracked only inside anchored nodes (`tracking`); most documents have none.
    """
    get_event = _Parser(text).get_event
    all_marks, nul_paths = loaded.marks, loaded.nul_paths
    stack: list[_Frame] = []
    parent: _Frame | None = None
    anchors: dict[str, tuple[Any, int, int]] = {}  # name -> (value, size, height)
    tracking = 0  # anchored frames open
    alias_nodes = 0
    documents = 0
    while True:
        event = get_event()
        if event is None:
            return
        kind = type(event)
        if kind is _SCALAR:
            if event.tag is not None:
                raise _fail("yaml_error", f"explicit tags such as {event.tag!r} are not allowed", event.start_mark)
            raw = event.value
            mark = event.start_mark
            plain = event.implicit[0]
            if parent is not None and parent.is_map and parent.key is _NO_KEY:
                if plain:
                    # Keys are text: a plain key is read by the core schema, then written canonically,
                    # so `~:` and `null:` are one key while `true:` and `1:` are "true" and "1".
                    key = resolve_plain(raw) if raw and raw[0] in _SPECIAL_START else raw
                    if type(key) is not str:
                        key = _key_text(key)
                else:
                    key = raw
                if event.anchor is not None:
                    anchors[event.anchor] = (key, 1, 0)
                _take_key(parent, key, mark, nul_paths)
                if tracking:
                    parent.size += 1
                continue
            if not plain or (raw and raw[0] not in _SPECIAL_START):
                value = raw
            else:
                value = resolve_plain(raw)
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1, 0)
            if parent is None:
                loaded.root_mark, loaded.value = mark, value
                continue
            # Placing a scalar is the commonest step of all: inlined.
            if parent.is_map:
                key = parent.key
                if type(value) is str and "\x00" in value:
                    nul_paths.append(parent.path + (key,))
                parent.container[key] = value
                parent.marks[key] = mark
                parent.key = _NO_KEY
            else:
                if type(value) is str and "\x00" in value:
                    nul_paths.append(parent.path + (len(parent.container),))
                parent.marks.append(mark)
                parent.container.append(value)
            if tracking:
                parent.size += 1
                if parent.height < 1:
                    parent.height = 1
        elif kind is _MAP_START or kind is _SEQ_START:
            if event.tag is not None:
                raise _fail("yaml_error", f"explicit tags such as {event.tag!r} are not allowed", event.start_mark)
            if len(stack) + 1 > max_depth:
                raise _fail("too_deep", f"the document nests deeper than {max_depth} levels", event.start_mark)
            is_map = kind is _MAP_START
            mark = event.start_mark
            if parent is None:
                path = ()
                loaded.root_mark = mark
            elif parent.is_map:
                if parent.key is _NO_KEY:
                    raise _fail("yaml_error", "a mapping key must be a plain value, not a "
                                + ("mapping" if is_map else "list"), mark)
                path = parent.path + (parent.key,)
                parent.marks[parent.key] = mark
            else:
                path = parent.path + (len(parent.container),)
                parent.marks.append(mark)
            parent = _Frame({} if is_map else [], path, event.anchor, is_map)
            all_marks[id(parent.container)] = (parent.marks, parent.key_marks)
            stack.append(parent)
            if event.anchor is not None:
                tracking += 1
        elif kind is _MAP_END or kind is _SEQ_END:
            frame = stack.pop()
            parent = stack[-1] if stack else None
            value = frame.container
            if frame.anchor is not None:
                anchors[frame.anchor] = (value, frame.size, frame.height)
                tracking -= 1
            if parent is None:
                loaded.value = value
                continue
            if parent.is_map:
                parent.container[parent.key] = value
                parent.key = _NO_KEY
            else:
                parent.container.append(value)
            if tracking:
                parent.size += frame.size
                if frame.height + 1 > parent.height:
                    parent.height = frame.height + 1
        elif kind is _ALIAS:
            mark = event.start_mark
            if event.anchor not in anchors:
                raise _fail("yaml_error", f"unknown alias *{event.anchor}", mark)
            value, size, height = anchors[event.anchor]
            alias_nodes += size
            if alias_nodes > max_alias_nodes:
                raise _fail("alias_limit", f"aliases expand to more than {max_alias_nodes:,} nodes", mark)
            if len(stack) + height > max_depth:
                raise _fail("too_deep", f"the document nests deeper than {max_depth} levels "
                            "once its aliases are expanded", mark)
            if parent is None:
                loaded.root_mark, loaded.value = mark, value
                continue
            if parent.is_map and parent.key is _NO_KEY:
                if isinstance(value, (dict, list)):
                    raise _fail("yaml_error", "a mapping key must be a plain value", mark)
                _take_key(parent, value if isinstance(value, str) else _key_text(value), mark, nul_paths)
            else:
                _take_value(parent, value, mark)
            if tracking:
                parent.size += size
                if height + 1 > parent.height:
                    parent.height = height + 1
        elif kind is yaml.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise _fail("yaml_error", "the file holds more than one YAML document", event.start_mark)


def _take_key(parent: _Frame, key: str, mark, nul_paths: list) -> None:
    if key in parent.container:
        first = parent.key_marks.get(key)
        where = f" (first at line {first.line + 1})" if first else ""
        raise _fail("yaml_error", f"duplicate key {key!r}{where}", mark)
    if "\x00" in key:
        nul_paths.append(parent.path + (key, "@key"))
    parent.key = key
    parent.key_marks[key] = mark


def _take_value(parent: _Frame, value: Any, mark) -> None:
    if parent.is_map:
        key = parent.key
        parent.container[key] = value
        parent.marks[key] = mark
        parent.key = _NO_KEY
    else:
        parent.marks.append(mark)
        parent.container.append(value)


def _key_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)
