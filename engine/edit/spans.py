"""Where every node of a YAML text starts and ends, from libyaml's event stream.

engine.yamlload gives values and start positions; a patch also needs where a
node ends, its style and its anchor, to replace exactly its characters. The
text has passed engine.yamlload's bounds before it gets here, so this walk is
bounded too. Offsets are Python string indexes of the text without its BOM.
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from engine.yamlload import _SPECIAL_START, _key_text, resolve_plain

_Parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Node:
    """One node: `kind` is "map", "seq", "scalar" or "alias".

    For a map `items` is a list of (key node, value node), for a seq a list of
    nodes; a scalar has `value` (its text as parsed) and `style` ("" plain, "'",
    '"', "|", ">"); an alias has `value` = the anchor's name and `target`.
    """

    __slots__ = ("kind", "start", "end", "style", "anchor", "flow", "items", "value", "target")

    def __init__(self, kind: str, start: int, anchor: str | None = None):
        self.kind = kind
        self.start = start
        self.end = start
        self.style = ""
        self.anchor = anchor
        self.flow = False
        self.items: list = []
        self.value = None
        self.target = None

    def get(self, key: str) -> tuple[Node, Node] | None:
        """The (key, value) pair of a map whose key is the text `key`."""
        for pair in self.items:
            if pair[0].kind == "scalar" and pair[0].value == key:
                return pair
        return None

    def content_end(self) -> int:
        """Where the node's own characters end: a block collection ends with its last descendant, and a
        block scalar that does not keep its trailing blank lines ends before them."""
        node = self
        while node.kind in ("map", "seq") and not node.flow and node.items:
            last = node.items[-1]
            node = last[1] if node.kind == "map" else last
        return node.end

    def __repr__(self) -> str:
        return f"Node({self.kind}, {self.start}-{self.end})"


def descendants(node: Node, keys: bool = False) -> Iterator[Node]:
    """The node and every node under it, aliases not followed; the keys of maps too when `keys`."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current.kind == "map":
            for key, value in current.items:
                if keys:
                    stack.append(key)
                stack.append(value)
        elif current.kind == "seq":
            stack.extend(current.items)


def build(text: str) -> Node:
    """The node tree of a text that engine.yamlload accepted (one document, a mapping at the root).

    One pass over libyaml's events; the loop is the hot path of every patch on a big file, so it keeps
    its work inline."""
    get_event = _Parser(text).get_event
    stack: list[Node] = []
    pending_key: list = []  # per open map: the key node waiting for its value, or None
    anchors: dict[str, Node] = {}
    root = None
    scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
    map_start, seq_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
    map_end, seq_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
    special = _SPECIAL_START
    parent = None
    while True:
        event = get_event()
        if event is None:
            break
        kind = type(event)
        if kind is scalar_event:
            node = Node("scalar", event.start_mark.index, event.anchor)
            node.end = event.end_mark.index
            value = node.value = event.value
            style = node.style = event.style or ""
            if not value and not style and event.anchor is None:
                node.start = node.end = _after_indicator(text, node.start)
            elif style == "|" or style == ">":
                node.end = _block_scalar_end(text, node)
        elif kind is alias_event:
            node = Node("alias", event.start_mark.index)
            node.end = event.end_mark.index
            node.value = event.anchor
            node.target = anchors.get(event.anchor)
        elif kind is map_start or kind is seq_start:
            node = Node("map" if kind is map_start else "seq", event.start_mark.index, event.anchor)
            node.flow = bool(event.flow_style)
            if parent is not None:
                _place(parent, pending_key, node)
            stack.append(node)
            pending_key.append(None)
            parent = node
            if event.anchor is not None:
                anchors[event.anchor] = node
            continue
        elif kind is map_end or kind is seq_end:
            node = stack.pop()
            pending_key.pop()
            node.end = event.end_mark.index if node.flow else node.content_end()
            parent = stack[-1] if stack else None
            if parent is None:
                root = node
            continue
        else:
            continue
        if node.anchor is not None:
            anchors[node.anchor] = node
        if parent is None:
            root = node
        elif parent.kind == "seq":
            parent.items.append(node)
        elif pending_key[-1] is None:
            if node.kind == "scalar" and not node.style and node.value and node.value[0] in special:
                key = resolve_plain(node.value)  # as engine.yamlload names a plain key: `~:` is the key "null"
                node.value = key if isinstance(key, str) else _key_text(key)
            pending_key[-1] = node
        else:
            parent.items.append((pending_key[-1], node))
            pending_key[-1] = None
    return root


def _place(parent: Node, pending_key: list, node: Node) -> None:
    if parent.kind == "seq":
        parent.items.append(node)
    elif pending_key[-1] is None:
        pending_key[-1] = node
    else:
        parent.items.append((pending_key[-1], node))
        pending_key[-1] = None


def _after_indicator(text: str, index: int) -> int:
    """An empty value (`key:`, `- `) has its place right after its `:` or `-`, not at the next token."""
    i = index - 1
    while i >= 0 and text[i] in " \t\r\n":
        i -= 1
    return i + 1 if i >= 0 and text[i] in ":-?,[{" else index


def _block_scalar_end(text: str, node: Node) -> int:
    """A `|` or `>` scalar's token runs to the next content; unless it keeps (`+`) its trailing blank lines,
    they belong to the text around it."""
    header_end = text.find("\n", node.start)
    header = text[node.start:header_end if header_end >= 0 else len(text)].split("#")[0]
    if "+" in header:
        return node.end
    end = node.end
    while end > node.start:
        line_start = text.rfind("\n", node.start, end - 1) + 1
        if line_start <= node.start or text[line_start:end].strip(" \t\r\n"):
            break
        end = line_start
    return end
