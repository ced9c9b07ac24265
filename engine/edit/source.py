"""A workflow text opened for patching: bounded load first, then its node spans and its layout habits.

The bounded loader (engine.yamlload) runs before anything else, so a text
past its size, depth or alias bounds is refused here and never reaches a
parser without bounds. Edits are splices of the text without its BOM; the
BOM and each line's ending are put back as they were.
"""

from __future__ import annotations

import contextlib
import gc

from engine.edit import spans
from engine.edit.errors import Patched, PatchError
from engine.yamlload import YamlLoadError, load

BOM = "\ufeff"
WHITE = " \t"  # YAML's white space; Python's strip() also takes U+00A0 and the other Unicode spaces, YAML's content


def blank(line: str) -> bool:
    """Whether YAML reads `line` (its line break included or not) as a blank line."""
    return not line.strip(WHITE + "\r\n")


@contextlib.contextmanager
def collector_paused():
    """Loading a big text makes ~100,000 objects that all live on: the cyclic collector would rescan them
    over and over (a third of a patch's time on a 1 MiB file). It runs again when the patch is done."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def bounded_load(text: str):
    """engine.yamlload.load, its refusals as PatchError (`too_large` or `not_parsed`)."""
    if not isinstance(text, str):
        raise PatchError("bad_patch", "the text must be a string")
    try:
        return load(text)
    except YamlLoadError as exc:
        problem = exc.problem
        where = f" (line {problem.line})" if problem.line else ""
        code = "too_large" if problem.code == "too_large" else "not_parsed"
        raise PatchError(code, f"the text does not parse: {problem.message}{where}") from None
    except RecursionError:  # defensive: the loader is iterative, but nothing hostile may escape as a 500
        raise PatchError("not_parsed", "the text nests too deeply") from None


def block_steps_loaded(text: str, loaded) -> bool:
    """Whether the loaded text's `steps` is a block list, told from where its value starts, without the node tree
    (which costs as much again as the load on a 1 MiB text): a list that is neither `[...]` nor an alias."""
    steps = loaded.value.get("steps")
    marks = loaded.marks.get(id(loaded.value))
    if not isinstance(steps, list) or marks is None or "steps" not in marks[0]:
        return False
    text = text[len(BOM):] if text.startswith(BOM) else text
    at = marks[0]["steps"].index
    if text.startswith("&", at):  # its anchor: the list itself starts after the name, blanks and comments
        while at < len(text) and text[at] not in " \t\r\n":
            at += 1
        while at < len(text) and text[at] in " \t\r\n#":
            if text[at] == "#":
                newline = text.find("\n", at)
                at = len(text) if newline < 0 else newline
            at += 1
    return not text.startswith(("[", "*"), at)


class Source:
    """The text (BOM apart), its values (aliases resolved), its node tree, and where its steps are."""

    def __init__(self, text: str, loaded=None):
        self.loaded = loaded if loaded is not None else bounded_load(text)  # `loaded`: bounded_load(text) done
        self.bom = BOM if text.startswith(BOM) else ""
        self.text = text[len(self.bom):]
        self.value: dict = self.loaded.value
        self.has_anchors = "&" in self.text
        self.newline = "\r\n" if self.text.count("\r\n") * 2 > self.text.count("\n") else "\n"
        self.root = spans.build(self.text)
        pair = self.root.get("steps") if self.root is not None and self.root.kind == "map" else None
        self.steps_pair = pair
        self.steps_node = pair[1] if pair is not None else None
        values = self.value.get("steps")
        self.step_values: list = values if isinstance(values, list) else []
        self.step_nodes: list = self.steps_node.items if self.steps_node is not None and \
            self.steps_node.kind == "seq" else []
        self.index: dict[str, int] = {}  # id -> position in `steps` (first holder of each id)
        for i, raw in enumerate(self.step_values):
            if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"] not in self.index:
                self.index[raw["id"]] = i

    def unchanged(self) -> Patched:
        """The answer of a patch that has nothing to do (its load handed on, as a patch's own check load is)."""
        return Patched(self.bom + self.text, [], {}, self.loaded)

    # -- lines -----------------------------------------------------------

    def line_start(self, i: int) -> int:
        return self.text.rfind("\n", 0, i) + 1

    def line_end(self, i: int) -> int:
        """The index after the newline that ends the line holding i (i itself when i starts a line
        after a newline)."""
        if i > 0 and self.text[i - 1] == "\n":
            return i
        j = self.text.find("\n", i)
        return len(self.text) if j < 0 else j + 1

    def column(self, i: int) -> int:
        return i - self.line_start(i)

    def after_deeper_comments(self, where: int, column: int) -> int:
        """Move an insertion point (a line start) past the comment lines that follow it indented deeper than
        `column`: they belong to what ends there, and a new block scalar would read them as its text."""
        best = where
        at = where
        while at < len(self.text):
            newline = self.text.find("\n", at)
            end = len(self.text) if newline < 0 else newline + 1
            line = self.text[at:end]
            stripped = line.strip(" \t\r\n")
            if stripped and not (stripped.startswith("#") and len(line) - len(line.lstrip(" ")) > column):
                break
            at = end
            if stripped:
                best = at
        return best

    def key_begin(self, key) -> int:
        """Where a mapping entry begins: its key, or the `?` of an explicit key."""
        i = key.start - 1
        while i >= 0 and self.text[i] in " \t":
            i -= 1
        return i if i >= 0 and self.text[i] == "?" else key.start

    def dash(self, node) -> int:
        """The index of the `-` that introduces a block list item (it may stand on a line of its own), or -1."""
        i = node.start - 1
        while i >= 0 and self.text[i] in " \t\r\n":
            i -= 1
        return i if i >= 0 and self.text[i] == "-" else -1

    # -- steps -------------------------------------------------------------

    def step_position(self, step_id: str) -> int:
        if not isinstance(step_id, str):
            raise PatchError("bad_patch", "a step id must be a string")
        i = self.index.get(step_id)
        if i is None or i >= len(self.step_nodes):
            raise PatchError("unknown_step", f"there is no step {step_id!r}")
        return i

    def block_steps(self) -> bool:
        return self.steps_node is not None and self.steps_node.kind == "seq" and not self.steps_node.flow

    def item_span(self, i: int) -> tuple[int, int]:
        """Step i's lines: its comment lines just above it, its dash line, to the end of its last line."""
        node = self.step_nodes[i]
        dash = self.dash(node)
        start = self.line_start(dash if dash >= 0 else node.start)
        while start > 0:
            above = self.line_start(start - 1)
            line = self.text[above:start].strip(" \t\r\n")
            if not line.startswith("#") or (self.steps_pair and above <= self.steps_pair[0].start):
                break
            start = above
        return start, self.line_end(node.content_end())

    def dash_column(self) -> int:
        """The column of the steps' dashes (2 when there is no block list yet)."""
        if self.block_steps() and self.step_nodes:
            dash = self.dash(self.step_nodes[0])
            if dash >= 0:
                return self.column(dash)
        return 2

    def item_indent(self) -> int:
        """Columns from a step's dash to its keys (`- id:` is 2): what most steps do (the first 200 of them;
        a dash on a line of its own counts by its keys' column), the earliest on a tie."""
        widths: dict[int, int] = {}
        if self.block_steps():
            for node in self.step_nodes[:200]:
                dash = self.dash(node)
                if dash >= 0 and node.kind == "map" and not node.flow and node.items:
                    width = self.column(self.key_begin(node.items[0][0])) - self.column(dash)
                    if width >= 2:
                        widths[width] = widths.get(width, 0) + 1
        return max(widths, key=widths.get) if widths else 2

    def map_indent(self) -> int:
        """How far a nested block mapping is indented under its key, as the steps do it (2 by default)."""
        for node in self.step_nodes[:50]:
            if node.kind != "map":
                continue
            for key, value in node.items:
                if value.kind == "map" and not value.flow and value.items:
                    width = self.column(value.items[0][0].start) - self.column(key.start)
                    if width > 0:
                        return width
        return 2

    def seq_offset(self) -> int:
        """Columns from a key to the dashes of its block list, as the steps do it (0: `depends_on:\\n- a`)."""
        for node in self.step_nodes[:50]:
            if node.kind != "map":
                continue
            for key, value in node.items:
                if value.kind == "seq" and not value.flow and value.items:
                    dash = self.dash(value.items[0])
                    if dash >= 0:
                        return max(0, self.column(dash) - self.column(key.start))
        return self.dash_column() - (self.column(self.steps_pair[0].start) if self.steps_pair else 0)

    def blank_between_steps(self) -> bool:
        if len(self.step_nodes) < 2 or not self.block_steps():
            return False
        start, _ = self.item_span(1)
        end0 = self.line_end(self.step_nodes[0].content_end())
        return not self.text[end0:start].strip(" \t\r\n") and "\n" in self.text[end0:start]
