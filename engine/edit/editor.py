"""Splicing edits into a Source: every edit replaces the characters of one node, entry or item.

An Editor collects splices (start, end, new text) of the text without its
BOM; `finish` applies them, checks that the new text loads to exactly the
values the patch meant (so a rendering mistake can never slip through as a
silent change), and computes the CodeMirror changes.
"""

from __future__ import annotations

import bisect

from typing import Any

from engine.edit import render
from engine.edit.changes import utf16_changes
from engine.edit.errors import PatchError, Patched
from engine.edit.source import Source, bounded_load
from engine.edit.spans import Node, descendants
from engine.edit.values import plain_copy, same

_MISSING = object()


class Editor:
    def __init__(self, source: Source):
        self.source = source
        self.text = source.text
        self.splices: list[tuple[int, int, str]] = []
        self.layout = render.Layout(source.map_indent(), source.seq_offset(), source.newline)
        self._parents: dict[int, tuple[Node | None, Any, tuple]] | None = None
        self._aliases: dict[int, list[Node]] | None = None  # id(anchored node) -> its aliases, one walk per patch
        self._pending: dict[int, Node] = {}  # aliases to write out at the end, unless replaced meanwhile
        self._handled: set[int] = set()
        self.values: Any = None  # the document's new values, when aliases must be written out as changed
        self.removed: list[tuple[int, int]] = []  # spans the patch removes (remove_spans)
        self._removed_starts: list[int] = []

    # -- splices -----------------------------------------------------------

    def splice(self, start: int, end: int, text: str) -> None:
        self.splices.append((start, end, text))

    def finish(self, expected: Any, renamed: dict | None = None) -> Patched:
        """Apply the splices, check the result loads to `expected` (the document's new values)."""
        self.flush()
        ordered = sorted(self.splices, key=lambda s: (s[0], s[1]))
        out: list[str] = []
        index = 0
        for start, end, text in ordered:
            if start < index:
                raise PatchError("bad_patch", "the patch touches one place twice; apply it in two steps")
            out.append(self.text[index:start])
            out.append(text)
            index = end
        out.append(self.text[index:])
        new_body = "".join(out)
        new_text = self.source.bom + new_body
        try:
            loaded = bounded_load(new_text)
        except PatchError as exc:
            if exc.code == "too_large":
                raise
            raise PatchError("bad_value", f"the change would not parse ({exc.message})") from None
        if not same(loaded.value, expected):
            raise PatchError("bad_value", "the change cannot be written without changing other values")
        changes = utf16_changes(self.text, ordered, len(self.source.bom))
        return Patched(new_text, changes, dict(renamed or {}), loaded)

    # -- structure -----------------------------------------------------------

    def parents(self) -> dict[int, tuple[Node | None, Any, tuple]]:
        """id(node) -> (parent node, the pair or index holding it, its path of keys and indexes)."""
        if self._parents is None:
            found: dict[int, tuple[Node | None, Any, tuple]] = {}
            root = self.source.root
            found[id(root)] = (None, None, ())
            stack = [(root, ())]
            while stack:
                node, path = stack.pop()
                if node.kind == "map":
                    for pair in node.items:
                        child_path = path + (pair[0].value,)
                        found[id(pair[1])] = (node, pair, child_path)
                        stack.append((pair[1], child_path))
                elif node.kind == "seq":
                    for k, child in enumerate(node.items):
                        found[id(child)] = (node, k, path + (k,))
                        stack.append((child, path + (k,)))
            self._parents = found
        return self._parents

    def remove_spans(self, spans: list[tuple[int, int]]) -> None:
        """The spans (sorted, apart) that this patch removes: aliases inside them are never written out."""
        self.removed = spans
        self._removed_starts = [start for start, _ in spans]

    def _removed(self, at: int) -> bool:
        i = bisect.bisect_right(self._removed_starts, at) - 1  # thousands of spans, each alias asked once
        return i >= 0 and at < self.removed[i][1]

    def aliases_of(self, targets: list[Node], outside: list[tuple[int, int]] = ()) -> list[Node]:
        """Alias nodes whose anchor is one of `targets`, except those inside a span of `outside` or of `removed`."""
        wanted = {id(t) for t in targets if t.anchor is not None}
        if not wanted:
            return []
        if self._aliases is None:  # every protect asks: walking the whole tree each time was quadratic
            self._aliases = {}
            for node in descendants(self.source.root):
                if node.kind == "alias":
                    self._aliases.setdefault(id(node.target), []).append(node)
        found = [node for target in wanted for node in self._aliases.get(target, ())
                 if not (any(start <= node.start < end for start, end in outside) or self._removed(node.start))]
        return sorted(found, key=lambda node: node.start)

    def value_at(self, path: tuple) -> Any:
        value = self.source.value
        for part in path:
            value = value[part]
        return value

    def expand(self, alias: Node) -> None:
        """Write the anchored value in place of `*name` (the alias's readers keep their value); done in
        `flush`, so a patch that rewrites that alias itself wins."""
        if id(alias) not in self._handled:
            self._pending[id(alias)] = alias

    def flush(self) -> None:
        while self._pending:
            _, alias = self._pending.popitem()
            self._expand_now(alias)

    def _expand_now(self, alias: Node) -> None:
        self._handled.add(id(alias))
        parent, slot, path = self.parents()[id(alias)]
        value = plain_copy(self.value_at(path))
        if self.values is not None:  # the anchored value changed (a paste renamed ids in it): write the new one
            changed = self.values
            for part in path:
                changed = changed[part]
            unchanged = same(changed, value)
            value = plain_copy(changed)
        else:
            unchanged = True
        target = alias.target
        if unchanged and target is not None and target.kind == "scalar" and target.style not in ("|", ">") \
                and "\n" not in self.text[target.start:target.end]:
            start = target.start
            if target.anchor is not None and self.text.startswith("&", start):
                start += 1 + len(target.anchor)
                while self.text[start] in " \t":
                    start += 1
            self.splice(alias.start, alias.end, self.text[start:target.end])  # its very characters
            return
        if target is not None and target.flow and not _has_comment(self.text, target):
            try:  # a one-line anchored value is written out on one line too
                self.splice(alias.start, alias.end, render.inline(value))
                return
            except ValueError:
                pass
        self.replace(alias, parent, slot, value, protect=False)

    def protect(self, node: Node) -> None:
        """Before a node's text changes: the aliases of it, or of an anchored node holding it, would change
        with it, so they get their value written out first (only the patched place changes)."""
        if not self.source.has_anchors:
            return
        parents = self.parents()
        chain = []
        current: Node | None = node
        while current is not None:
            if current.anchor is not None:
                chain.append(current)
            entry = parents.get(id(current))
            current = entry[0] if entry else None
        # and the anchors inside it, whose text goes or changes with it
        chain += [inner for inner in descendants(node, keys=True) if inner is not node and inner.anchor is not None]
        for alias in self.aliases_of(chain, [(node.start, node.content_end())]):
            self.expand(alias)

    # -- edits -----------------------------------------------------------------

    def replace(self, node: Node, parent: Node, slot: Any, value: Any, block_style: str | None = None,
                protect: bool = True) -> None:
        """Replace a node's value; a scalar keeps its quoting, a flow collection stays on its line when the
        new value fits there, anything else is rendered as a block in the file's indentation."""
        if protect:
            self.protect(node)
        self._handled.add(id(node))
        self._pending.pop(id(node), None)
        src = self.source
        style = node.style if node.kind == "scalar" else ""
        collection = isinstance(value, (dict, list))
        multiline = isinstance(value, str) and "\n" in value
        if parent.flow:
            self.splice(node.start, node.end, self._inline(value, style))
            return
        if not collection and not multiline and style not in ("|", ">") and (
                node.kind in ("scalar", "alias") or node.flow):
            text = self._inline(value, style)
            end = node.end
            if node.start == node.end:  # an empty value right after its `:` or `-`, with the spaces after it
                text = " " + text
                while end < len(self.text) and self.text[end] in " \t":
                    end += 1
            self.splice(node.start, end, text)
            return
        if node.kind in ("map", "seq") and node.flow and not _has_comment(self.text, node):
            try:
                self.splice(node.start, node.end, render.inline(value))
                return
            except ValueError:
                pass
        end = node.content_end()
        if node.start == node.end:  # an empty value: the spaces after its indicator go with it
            while end < len(self.text) and self.text[end] in " \t":
                end += 1
        if parent.kind == "map":  # the key keeps its characters (quotes, `? `): only what follows its colon changes
            key = slot[0]
            start = self.text.index(":", key.end) + 1
            text = render.entry("k", value, src.column(key.start), self.layout,
                                block_style if block_style is not None else style if style in ("|", ">") else "")[2:]
        else:
            dash = src.dash(node)
            if dash < 0:
                raise PatchError("bad_path", "that list item cannot be rewritten here")
            start = dash + 1
            text = render.sequence_item(value, src.column(dash), self.layout)[src.column(dash) + 1:]
        if not (end > 0 and self.text[end - 1] == "\n") and text.endswith(src.newline):
            text = text[:-len(src.newline)]
        line_end = src.line_end(end)
        tail = self.text[end:line_end].rstrip("\r\n")
        if "\n" in text and tail.strip().startswith("#"):  # its end-of-line comment moves up to the key's line
            first, rest = text.split("\n", 1)
            newline_cr = "\r" if first.endswith("\r") else ""
            text = first.rstrip("\r") + "  " + tail.strip() + newline_cr + "\n" + rest
            end += len(tail)
        if parent.kind == "map":
            start, text = self._keep_key_comment(node, start, text)
        self.splice(start, end, text)

    def _keep_key_comment(self, node: Node, start: int, text: str) -> tuple[int, str]:
        """A block value below its key may have a comment on the key's line (`depends_on:  # why`): it
        stays there, the new value going below it or, on one line, before it."""
        key_line_end = self.source.line_end(start)
        comment = self.text[start:key_line_end].strip(" \t\r\n")
        if not comment.startswith("#") or node.start < key_line_end:
            return start, text
        if text.startswith(("\n", "\r\n")):  # a block: it starts on the next line, after the comment's
            return key_line_end - (2 if self.text.startswith("\r\n", key_line_end - 2) else 1), text
        first, newline, rest = text.partition("\n")
        cr = "\r" if first.endswith("\r") else ""
        return start, first.rstrip("\r") + "  " + comment + cr + newline + rest

    def _content_start(self, node: Node) -> int:
        """Where a node's own characters begin, after its `&anchor`."""
        start = node.start
        if node.anchor is not None and self.text.startswith("&", start):
            start += 1 + len(node.anchor)
            while start < len(self.text) and self.text[start] in " \t\r\n":
                start += 1
        return start

    @staticmethod
    def _inline(value: Any, style: str) -> str:
        try:
            return render.scalar_like(value, style)
        except ValueError:
            raise PatchError("bad_value", "that value cannot be written on one line here") from None

    def add_entry(self, mapping: Node, key: str, value: Any) -> None:
        """Append `key: value` to a mapping."""
        self.protect(mapping)
        src = self.source
        if mapping.flow and not self.text.startswith("{", self._content_start(mapping)):  # `[k: v]`: a pair without braces
            changed = plain_copy(self.value_at(self.parents()[id(mapping)][2]))
            changed[key] = value
            self._rewrite_container(mapping, changed)
            return
        if mapping.flow:
            try:
                text = f"{render.inline(key)}: {render.inline(value)}"
            except ValueError:
                raise PatchError("bad_value", "that value cannot be written inside a one-line mapping") from None
            close = mapping.end - 1
            self.splice(close, close, (", " if mapping.items else "") + text)
            return
        column = src.column(src.key_begin(mapping.items[0][0]))
        where = src.line_end(mapping.content_end())  # before the comments that follow: they keep their lines
        closed = src.after_deeper_comments(where, column) != where
        text = self.eof_break(where) + " " * column + render.entry(key, value, column, self.layout, closed=closed)
        self.splice(where, where, text)

    def eof_break(self, where: int) -> str:
        """The line break to write before text appended to a file whose last line has none. A `|` or `>`
        scalar ending the file would take that break into its value, so it gets `-` (strip) to keep it."""
        if where != len(self.text) or not self.text or self.text.endswith("\n"):
            return ""
        node = self.source.root
        while node.kind in ("map", "seq") and not node.flow and node.items:
            node = node.items[-1][1] if node.kind == "map" else node.items[-1]
        if node.kind == "scalar" and node.style in ("|", ">") and node.end == len(self.text):
            at = self.text.index(node.style, node.start) + 1
            header = self.text[at:self.source.line_end(at)].split("#")[0]
            if "-" not in header and "+" not in header:
                self.splice(at, at, "-")
        return self.source.newline

    def _rewrite_container(self, node: Node, value: Any) -> None:
        self.splice(node.start, node.end, render.inline(value))

    def remove_entry(self, mapping: Node, pair: tuple) -> None:
        self.protect(pair[1])
        src = self.source
        key, value = pair
        position = mapping.items.index(pair)
        begin = src.key_begin(key)
        following = src.key_begin(mapping.items[position + 1][0]) if position + 1 < len(mapping.items) else None
        if mapping.flow and not self.text.startswith("{", self._content_start(mapping)):  # `[k: v]`: a pair without braces
            changed = plain_copy(self.value_at(self.parents()[id(mapping)][2]))
            del changed[key.value]
            self._rewrite_container(mapping, changed)
            return
        if mapping.flow:
            if following is not None:
                self.splice(begin, following, "")
            elif position > 0:
                self.splice(mapping.items[position - 1][1].end, value.end, "")
            else:
                self.splice(begin, value.end, "")
            return
        line = src.line_start(begin)
        if src.text[line:begin].strip(" "):  # `- key: value`: the dash stays, the next key moves up
            if following is not None:
                self.splice(begin, following, "")
            else:
                self.splice(begin, src.line_end(value.content_end()), src.newline)
            return
        self.splice(line, src.line_end(value.content_end()), "")

    def append_item(self, sequence: Node, value: Any) -> None:
        self.protect(sequence)
        src = self.source
        if sequence.flow:
            close = sequence.end - 1
            self.splice(close, close, (", " if sequence.items else "") + render.inline(value))
            return
        first = sequence.items[0]
        dash = src.dash(first)
        where = src.line_end(sequence.content_end())
        closed = src.after_deeper_comments(where, src.column(dash)) != where
        text = self.eof_break(where) + render.sequence_item(value, src.column(dash), self.layout, closed=closed)
        self.splice(where, where, text)

    def remove_items(self, sequence: Node, positions: list[int]) -> None:
        """Remove some items of a list that keeps at least one."""
        for k in positions:
            self.protect(sequence.items[k])
        src = self.source
        dropped = set(positions)  # a list may name one step 100,000 times: no scan of `positions` per item
        keep = [k for k in range(len(sequence.items)) if k not in dropped]
        if sequence.flow:
            texts = [self.text[sequence.items[k].start:sequence.items[k].end] for k in keep]
            self.splice(sequence.items[0].start, sequence.items[-1].end, ", ".join(texts))
            return
        for k in positions:
            item = sequence.items[k]
            dash = src.dash(item)
            if src.text[src.line_start(dash):dash].strip(" "):
                raise PatchError("bad_path", "that list item shares its line; edit the text")
            self.splice(src.line_start(dash), src.line_end(item.content_end()), "")


def _has_comment(text: str, node: Node) -> bool:
    return "#" in text[node.start:node.end]
