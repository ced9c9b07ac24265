"""Lossless, proved (issue 20 point 5): random sequences of 20 patches keep every byte the patch does not own.

Every conformance case, every example and the corpus of comment-rich files (tests/engine/edit/corpus) gets
sequences of patches drawn from its own step ids and fields, applied one after the other with
engine.edit.apply_patch. After each patch:

(a) a patch that changes nothing (an edge already explicit, a rename there and back) gives identical bytes;
(b) every line outside the patched step's block is unchanged byte for byte (a rename: every changed line differs
    only by the id's tokens), with the blocks read from the YAML parser's own events, not from the code under test;
(c) every comment not inside a removed step or a removed or replaced field survives;
(d) the BOM and the line-ending style are kept;
(e) the text still parses and its values are exactly the old ones with the patch's change (so an anchor's other
    users never change), or PatchError was raised for a reason that holds;
(f) `changes` (UTF-16 offsets) applied to the old text give the new text.

Files the bounded loader refuses (the hostile cases) are edited as text only and are left out here.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import signal
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from engine.edit import PatchError, apply_patch, changes_between, copy_steps
from engine.edit.merge import lines
from engine.validation import STEP_ID
from engine.yamlload import YamlLoadError, load

ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "cases"
CORPUS = Path(__file__).resolve().parent / "corpus"
FILES = sorted([*CONFORMANCE.glob("*.yaml"), *(ROOT / "examples").glob("*.yaml"), *CORPUS.glob("*.yaml")])
PATCHES = 20
HANG_S = 60
BOM = "\ufeff"
PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml, as the bounded loader: the same reading of tabs
CI = os.environ.get("CI") == "true"
# In CI: the same examples every run, and no shrinking (a sequence of 20 patches shrinks for minutes; the failing
# draws are printed as they are, and the derandomized run repeats them).
SETTINGS = settings(max_examples=5, deadline=None, derandomize=CI, database=None if CI else settings().database,
                    phases=[Phase.explicit, Phase.generate] if CI else list(Phase),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def read(path: Path) -> str | None:
    """The file as text when the bounded loader takes it; None for a hostile file."""
    try:
        text = path.read_bytes().decode("utf-8")
        load(text)
    except (UnicodeDecodeError, YamlLoadError):
        return None
    return text


TEXTS = {path: read(path) for path in FILES}
PARSED = [path for path, text in TEXTS.items() if text is not None]
LEFT_OUT = sorted(path.stem for path, text in TEXTS.items() if text is None)


def test_only_the_hostile_cases_are_left_out_and_the_corpus_is_all_valid_workflows():
    from engine.validation import validate_source
    assert LEFT_OUT == ["validate_alias_bomb", "validate_duplicate_keys", "validate_non_mapping_root",
                        "validate_too_deep"]
    corpus = sorted(CORPUS.glob("*.yaml"))
    assert len(corpus) >= 8
    for path in corpus:
        assert validate_source(path.read_bytes()).valid, path.name
    assert len(PARSED) >= 50


# -- the shape of a text, read from the parser's events (not from the code under test) ------------------

class Shape:
    """Line spans (0-based, inclusive) of every node by path, anchors and aliases, comments."""

    def __init__(self, text: str):
        self.text = text
        self.lines = lines(text)
        self.value = load(text).value
        body = text[1:] if text.startswith(BOM) else text
        self.body_lines = body.split("\n")
        self.spans: dict[tuple, list[int]] = {}   # path -> [first line, last line]
        self.key_lines: dict[tuple, int] = {}      # path -> line of the key that introduces it
        self.anchors: dict[str, tuple] = {}        # anchor -> path of the node holding it (the latest)
        self.aliases: list[tuple[tuple, tuple]] = []  # (path of the alias, path of its anchor's node)
        self.root_keys: list[tuple[str, int]] = []
        self.columns: dict[tuple, int] = {}        # path -> column where a mapping or sequence starts
        self.flow_steps = False
        self._walk(body)
        self.comments = _comments(body)
        steps = self.value.get("steps")
        self.steps: list = steps if isinstance(steps, list) else []
        self.ids: list[str] = []
        self.holders: Counter = Counter()
        for raw in self.steps:
            if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                self.holders[raw["id"]] += 1
                if STEP_ID.fullmatch(raw["id"]) and raw["id"] not in self.ids:
                    self.ids.append(raw["id"])
        self.all_ids = set(self.holders)
        self.sequential = self.value.get("sequential") is True

    @functools.cached_property
    def has_cycle(self) -> bool:
        from engine.validation import validate_source
        return any(p.code == "cycle" for p in validate_source(self.text).problems)

    def _last(self, mark) -> int:
        line = self.body_lines[mark.line] if mark.line < len(self.body_lines) else ""
        return mark.line if line[:mark.column].strip() else mark.line - 1

    def _walk(self, body: str) -> None:
        stack: list[dict] = []  # frames: {"path", "map", "key", "index", "flow", "first", "last"}
        for event in yaml.parse(body, Loader=PARSER):
            if isinstance(event, (yaml.StreamStartEvent, yaml.StreamEndEvent, yaml.DocumentStartEvent,
                                  yaml.DocumentEndEvent)):
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                if stack[-1].get("ignore"):  # inside a key that is a collection: not a value of ours
                    stack[-1]["depth"] -= 1
                    if stack[-1]["depth"] == 0:
                        stack.pop()
                    continue
                frame = stack.pop()
                last = self._last(event.end_mark) if frame["flow"] else frame["last"]
                self._close(stack, frame["path"], frame["first"], last)
                continue
            parent = stack[-1] if stack else None
            if parent is not None and parent.get("ignore"):
                if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                    parent["depth"] += 1
                continue
            if parent is not None and parent["map"] and parent["key"] is None:  # a key
                key = event.value if isinstance(event, yaml.ScalarEvent) else f"<key {event.start_mark.line}>"
                parent["key"] = key
                self.key_lines[parent["path"] + (key,)] = event.start_mark.line
                if len(stack) == 1:
                    self.root_keys.append((key, event.start_mark.line))
                if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                    stack.append({"ignore": True, "depth": 1})
                continue
            if parent is None:
                path = ()
            elif parent["map"]:
                path = parent["path"] + (parent["key"],)
            else:
                path = parent["path"] + (parent["index"],)
            anchor = getattr(event, "anchor", None)
            if isinstance(event, yaml.AliasEvent):
                self.aliases.append((path, self.anchors.get(anchor, ())))
                self._close(stack, path, event.start_mark.line, self._last(event.end_mark))
            elif anchor is not None:
                self.anchors[anchor] = path
            if isinstance(event, yaml.ScalarEvent):
                self._close(stack, path, event.start_mark.line, self._last(event.end_mark))
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if path == ("steps",) and event.flow_style:
                    self.flow_steps = True
                self.columns[path] = event.start_mark.column
                stack.append({"path": path, "map": isinstance(event, yaml.MappingStartEvent), "key": None,
                              "index": 0, "flow": bool(event.flow_style), "first": event.start_mark.line,
                              "last": event.start_mark.line})

    def _close(self, stack: list, path: tuple, first: int, last: int) -> None:
        """A node is complete: record its span and hand it to its parent."""
        self.spans[path] = [first, max(first, last)]
        if stack:
            parent = stack[-1]
            parent["last"] = max(parent["last"], last)
            if parent["map"]:
                parent["key"] = None
            else:
                parent["index"] += 1

    # -- regions (half-open [start, end) in old line indexes) ---------------------------------------

    def position(self, step_id: str) -> int:
        return next(i for i, raw in enumerate(self.steps) if isinstance(raw, dict) and raw.get("id") == step_id)

    def core(self, i: int) -> tuple[int, int]:
        first, last = self.spans[("steps", i)]
        return first, last + 1

    def steps_end(self) -> int:
        """The line after the steps' region: the next document key's line, or the end."""
        after = [line for key, line in self.root_keys if line > self.spans.get(("steps",), [0, 0])[1]]
        return min(after) if after else len(self.lines)

    def gap_after(self, i: int) -> tuple[int, int]:
        end = self.core(i + 1)[0] if i + 1 < len(self.steps) else self.steps_end()
        return self.core(i)[1], end

    def removal(self, i: int) -> tuple[int, int]:
        """The step's lines with the comments and blank lines around it (the only step: its `steps:` line too)."""
        start = self.core(i - 1)[1] if i > 0 else self.key_lines[("steps",)] + (len(self.steps) > 1)
        end = self.core(i + 1)[0] if i + 1 < len(self.steps) else self.core(i)[1]
        return start, end

    def entry(self, path: tuple) -> tuple[int, int]:
        first = self.key_lines.get(path, self.spans[path][0])
        return first, self.spans[path][1] + 1

    def entry_and_its_comments(self, path: tuple) -> set[int]:
        """An entry's lines and the comment lines just above it (they go with it when it is removed)."""
        first, end = self.entry(path)
        own = self.comment_lines(whole=True)
        while first > 0 and (first - 1 in own or not self.lines[first - 1].strip()):
            first -= 1
        return set(range(first, end))

    def alias_users(self, regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The blocks that alias an anchor inside the regions (a patch expands those aliases first)."""
        out = []
        for alias_path, anchor_path in self.aliases:
            if anchor_path in self.spans and any(s <= self.spans[anchor_path][0] < e for s, e in regions):
                if len(alias_path) >= 2 and alias_path[0] == "steps":
                    out.append(self.core(alias_path[1]))
                else:
                    out.append(self.entry(alias_path))
        return out

    def comment_lines(self, whole: bool = False) -> set[int]:
        """Lines holding a comment (whole: only lines that are nothing but a comment)."""
        return {line for line, text in self.comments
                if not whole or self.body_lines[line].strip() == text.strip()}


def _comments(body: str) -> list[tuple[int, str]]:
    """(line, text) of each comment: a `#` at a line's start or after a blank, outside every scalar token."""
    scalars = [(t.start_mark.index, t.end_mark.index) for t in yaml.scan(body, Loader=PARSER)
               if isinstance(t, yaml.ScalarToken)]
    found, at = [], 0
    for number, line in enumerate(body.split("\n")):
        for match in re.finditer(r"(?:^|(?<=[ \t]))#[^\n]*", line):
            index = at + match.start()
            if not any(s <= index < e for s, e in scalars):
                found.append((number, match.group().rstrip(" \t\r")))
                break
        at += len(line) + 1
    return found


# -- checks ------------------------------------------------------------------------------------------

def merged(regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(regions):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def only_regions_changed(old: list[str], new: list[str], regions: list[tuple[int, int]]) -> bool:
    """new = old[:s1] + anything + old[e1:s2] + anything + ... + old[ek:], with the kept pieces byte for byte."""
    pieces, at = [], 0
    for s, e in merged(regions):
        pieces.append(old[at:s])
        at = e
    pieces.append(old[at:])
    head, tail = pieces[0], pieces[-1]
    if len(pieces) == 1:
        return new == old
    if new[:len(head)] != head or (tail and new[len(new) - len(tail):] != tail):
        return False
    lo, hi = len(head), len(new) - len(tail)
    if hi < lo:
        return False
    for piece in pieces[1:-1]:  # earliest placement of each kept piece, in order
        for p in range(lo, hi - len(piece) + 1):
            if new[p:p + len(piece)] == piece:
                lo = p + len(piece)
                break
        else:
            return False
    return True


def token(step_id: str) -> str:
    return rf"(?<![A-Za-z0-9_]){re.escape(step_id)}(?![A-Za-z0-9_])"


def differs_only_by_ids(old: str, new: str, mapping: dict[str, str]) -> bool:
    """new is old with some occurrences of the mapped ids' tokens replaced by their new ids."""
    if old == new or not mapping:
        return old == new
    parts = re.split("(" + "|".join(token(k) for k in sorted(mapping, key=len, reverse=True)) + ")", old)
    pattern = "".join(re.escape(part) if i % 2 == 0 else f"(?:{re.escape(part)}|{re.escape(mapping[part])})"
                      for i, part in enumerate(parts))
    return re.fullmatch(pattern, new, re.DOTALL) is not None


def same(a, b, mapping: dict[str, str]) -> bool:
    """Equal values, types included (1, 1.0 and true differ); strings may differ by the mapped ids' tokens."""
    if isinstance(a, str) and isinstance(b, str):
        return differs_only_by_ids(a, b, mapping)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(same(a[k], b[k], mapping) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y, mapping) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def normal(value: dict, sequential: bool) -> dict:
    """Order of depends_on does not matter; an empty depends_on is no depends_on unless the document is
    sequential (there it stops the step from following the one before it)."""
    value = dict(value)
    if isinstance(value.get("steps"), list):
        steps = []
        for raw in value["steps"]:
            if isinstance(raw, dict) and isinstance(raw.get("depends_on"), list):
                raw = dict(raw)
                if raw["depends_on"] == [] and not sequential:
                    del raw["depends_on"]
                elif all(isinstance(d, str) for d in raw["depends_on"]):
                    raw["depends_on"] = sorted(raw["depends_on"])
            steps.append(raw)
        value["steps"] = steps
    return value


def apply_changes(old: str, changes: list[dict]) -> str:
    """What CodeMirror does with the changes: UTF-16 offsets into the old text."""
    units = old.encode("utf-16-le")
    out, at = [], 0
    for change in changes:
        assert set(change) == {"from", "to", "insert"}, change
        start, end = change["from"] * 2, change["to"] * 2
        assert at <= start <= end <= len(units), ("changes must be sorted and not overlap", changes)
        out.append(units[at:start])
        out.append(change["insert"].encode("utf-16-le", "surrogatepass"))
        at = end
    out.append(units[at:])
    return b"".join(out).decode("utf-16-le")


def line_ending(text: str) -> str:
    crlf, lf = text.count("\r\n"), text.count("\n")
    return "none" if lf == 0 else "crlf" if crlf == lf else "lf" if crlf == 0 else "mixed"


# -- the patches, drawn from the document's own ids and fields ---------------------------------------

_CHARS = list("abc xyz:#-'\"\\{}[],&*!|>%@`\t\n") + ["é", "日", "🚀", "\u0301", "\u00a0"]
TEXT = st.text(alphabet=st.sampled_from(_CHARS), max_size=24)
SCALAR = st.one_of(
    TEXT,
    st.sampled_from(["", "yes", "no", "null", "~", "1.0", "017", "0x1F", " lead", "trail ", "a: b", "- item",
                     "# hash", "*ref", "&anchor", "!tag", "${fetch.stdout}", "multi\nline\n", "multi\nline",
                     "\ttab", "%percent", "@at", "'single'", '"double"', "ends with colon:", "…", "𝔐"]),
    st.integers(-10**6, 10**6), st.sampled_from([0.5, 2.25, -1.5, 10**20]), st.booleans(), st.none())
KEYS = st.sampled_from(["a", "b c", "x-y", "ключ", "1", "true", "k: v", "#k", "🚀"])
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(KEYS, inner, max_size=3)), max_leaves=6)
STEP_PATHS = [["command"], ["name"], ["timeout"], ["retry", "max_retries"], ["mock", "stdout"], ["x-note"],
              ["outputs", "extra", "type"], ["agent_config", "temperature"], ["condition"], ["label"]]
DOC_PATHS = [["description"], ["variables", "k"], ["variables", "odd key: #1"], ["x-editor", "zoom"],
             ["timeout"], ["phases"]]
NAMES = ["added", "z", "step_" + "a" * 59, "ünï", "w"]


def leaf_paths(value, prefix=(), depth=3) -> list[list]:
    out = []
    if isinstance(value, dict) and depth:
        for key, child in value.items():
            if isinstance(key, str):
                out.append([*prefix, key])
                out += leaf_paths(child, (*prefix, key), depth - 1)
    return out


def fresh(shape: Shape, data, taken: set[str]) -> str:
    word = data.draw(st.sampled_from(NAMES), label="name")
    word = word if STEP_ID.fullmatch(word) else "fresh"
    k, name = 2, word
    while name in shape.all_ids or name in taken or re.search(token(name), shape.text):  # not even a dangling ref
        name = f"{word[:58]}_{k}"
        k += 1
    return name


def draw_op(shape: Shape, data) -> dict:
    kinds = ["step.add", "field.set", "field.unset"]
    if shape.ids:
        kinds += ["step.remove", "selection.remove", "step.rename", "step.duplicate", "edge.add", "edge.add",
                  "edge.remove", "field.set", "field.set", "field.unset", "selection.paste", "rename.back", "noop.edge"]
    kind = data.draw(st.sampled_from(kinds), label="kind")

    def pick(label: str) -> str:
        return data.draw(st.sampled_from(shape.ids), label=label)

    def after() -> str | None:
        return data.draw(st.one_of(st.none(), st.sampled_from(shape.ids)) if shape.ids else st.none(), label="after")

    if kind == "step.add":
        step = {"id": fresh(shape, data, set()), "agent": "shell",
                "command": data.draw(st.one_of(TEXT, st.just("echo hi")), label="command")}
        if shape.ids and data.draw(st.booleans(), label="with depends_on"):
            step["depends_on"] = [pick("dependency")]
        if data.draw(st.booleans(), label="with extra"):
            step[data.draw(st.sampled_from(["name", "x-extra", "retry"]), label="extra")] = (
                {"max_retries": 2} if "retry" in step else data.draw(VALUE, label="extra value"))
        if data.draw(st.integers(0, 9), label="bad id?") == 0:
            step["id"] = data.draw(st.sampled_from(["Bad", "1x", "a-b", "", "x" * 65]), label="bad id")
        return {"op": "step.add", "step": step, "after": after()}
    if kind in ("step.remove", "step.duplicate"):
        return {"op": kind, "id": pick("id")}
    if kind == "selection.remove":
        return {"op": kind, "ids": data.draw(st.lists(st.sampled_from(shape.ids), min_size=1, max_size=4, unique=True),
                                             label="removed")}
    if kind in ("step.rename", "rename.back"):
        return {"op": kind, "id": pick("id"), "to": fresh(shape, data, set())}
    if kind in ("edge.add", "edge.remove", "noop.edge"):
        if kind != "edge.add":
            explicit = [(d, raw["id"]) for raw in shape.steps if isinstance(raw, dict) and raw.get("id") in shape.ids
                        and isinstance(raw.get("depends_on"), list) for d in raw["depends_on"] if d in shape.ids]
            if explicit and data.draw(st.integers(0, 4), label="explicit?") > 0:
                a, b = data.draw(st.sampled_from(explicit), label="edge")
                return {"op": "edge.add" if kind == "noop.edge" else kind, "from": a, "to": b}
            if kind == "noop.edge":
                kind = "edge.add"
        return {"op": kind, "from": pick("from"), "to": pick("to")}
    if kind == "selection.paste":
        ids = data.draw(st.lists(st.sampled_from(shape.ids), min_size=1, max_size=3, unique=True), label="copied")
        ids = [i for i in shape.ids if i in ids]
        return {"op": kind, "yaml": copy_steps(shape.text, ids), "after": after(), "_copied": ids}
    on_step = bool(shape.ids) and data.draw(st.integers(0, 3), label="on a step?") > 0
    step_id = pick("id") if on_step else None
    target = shape.steps[shape.position(step_id)] if on_step else {k: v for k, v in shape.value.items()
                                                                       if k != "steps"}
    existing = [p for p in leaf_paths(target) if p != ["id"]]
    if kind == "field.unset":
        if existing and data.draw(st.integers(0, 5), label="existing?") > 0:
            path = data.draw(st.sampled_from(existing), label="path")
        else:
            path = data.draw(st.sampled_from(STEP_PATHS if on_step else DOC_PATHS), label="path")
        return {"op": kind, "id": step_id, "path": path}
    choices = (STEP_PATHS if on_step else DOC_PATHS) + existing
    path = data.draw(st.sampled_from(choices), label="path")
    if on_step and data.draw(st.integers(0, 19), label="id?") == 0:
        path = ["id"]
    return {"op": kind, "id": step_id, "path": path, "value": data.draw(VALUE, label="value")}


# -- what each patch must do -------------------------------------------------------------------------

def unshared(value):
    """A copy where an alias's value is a copy of its own (deepcopy would keep the loader's sharing)."""
    if isinstance(value, dict):
        return {k: unshared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unshared(v) for v in value]
    return value


def get(value, path):
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None, False
        value = value[key]
    return value, True


def expected(shape: Shape, op: dict, result) -> tuple[dict, dict, list, set]:
    """The values after the patch, the id mapping strings may follow, the changed regions, exempt lines."""
    value = unshared(shape.value)
    steps = value.get("steps") if isinstance(value.get("steps"), list) else None
    kind = op["op"]
    everything = [(0, len(shape.lines))]
    if kind in ("step.add", "selection.paste", "step.duplicate"):
        if kind == "step.add":
            new_steps = [op["step"]]
            mapping = {}
        elif kind == "step.duplicate":
            i = shape.position(op["id"])
            name, k = f"{op['id']}_copy", 2
            while name in shape.all_ids:
                name, k = f"{op['id']}_copy_{k}", k + 1
            if len(name) > 64:  # the contract's name does not fit: any fresh valid id will do
                got = load(result.text).value["steps"][i + 1].get("id")
                assert STEP_ID.fullmatch(got) and got not in shape.all_ids, got
                name = got
            new_steps = [{**unshared(shape.steps[i]), "id": name}]
            mapping = {op["id"]: name}
        else:
            mapping = {old: result.renamed.get(old, old) for old in op["_copied"]}
            new_steps = []
            for old in op["_copied"]:
                raw = unshared(shape.steps[shape.position(old)])
                raw["id"] = mapping[old]
                if isinstance(raw.get("depends_on"), list):
                    raw["depends_on"] = [mapping.get(d, d) if isinstance(d, str) else d for d in raw["depends_on"]]
                new_steps.append(raw)
        after = op.get("after", op.get("id"))
        if steps is None:
            value["steps"] = new_steps
            return value, mapping, everything, set()
        at = shape.position(after) + 1 if after is not None else len(steps)
        steps[at:at] = new_steps
        if shape.flow_steps:
            return value, mapping, [(shape.key_lines[("steps",)], shape.steps_end())], set()
        region = shape.gap_after(at - 1) if at > 0 else (shape.key_lines[("steps",)] + 1, shape.core(0)[0])
        return value, mapping, [region], set()
    if kind in ("step.remove", "selection.remove"):
        gone = set(op["ids"]) if kind == "selection.remove" else {op["id"]}
        removed = sorted(shape.position(i) for i in gone)
        regions = [shape.removal(i) for i in removed]
        if len(removed) == len(shape.steps):  # all of them: `steps: []` in place of the key's line too
            regions.append((shape.key_lines[("steps",)], shape.key_lines[("steps",)] + 1))
        exempt = {line for region in regions for line in range(*region)}
        for i in reversed(removed):
            del steps[i]
        for j, raw in enumerate(shape.steps):
            if j not in removed and isinstance(raw, dict) and isinstance(raw.get("depends_on"), list) \
                    and gone.intersection(d for d in raw["depends_on"] if isinstance(d, str)):
                regions.append(shape.core(j))
                exempt |= shape.entry_and_its_comments(("steps", j, "depends_on"))
        for raw in steps:
            if isinstance(raw, dict) and isinstance(raw.get("depends_on"), list):
                raw["depends_on"] = [d for d in raw["depends_on"] if d not in gone]
        return value, {}, regions + shape.alias_users(regions), exempt
    if kind in ("step.rename", "rename.back"):
        i = shape.position(op["id"])
        steps[i]["id"] = op["to"]
        for raw in steps:
            if isinstance(raw, dict) and isinstance(raw.get("depends_on"), list):
                raw["depends_on"] = [op["to"] if d == op["id"] else d for d in raw["depends_on"]]
            if isinstance(raw, dict) and isinstance(raw.get("stdin"), str):
                raw["stdin"] = re.sub(r"^\$" + token(op["id"]), "$" + op["to"], raw["stdin"])
            if isinstance(raw, dict) and isinstance(raw.get("inputs"), dict):
                for spec in raw["inputs"].values():
                    if isinstance(spec, dict) and isinstance(spec.get("from"), str):
                        spec["from"] = re.sub("^" + token(op["id"]), op["to"], spec["from"])
        return value, {op["id"]: op["to"]}, None, set()
    if kind in ("edge.add", "edge.remove"):
        j = shape.position(op["to"])
        raw = steps[j]
        deps = raw.get("depends_on")
        if kind == "edge.add":
            if not isinstance(deps, list):
                deps = []
                if "depends_on" not in raw and shape.sequential and j > 0 and isinstance(steps[j - 1], dict) \
                        and isinstance(steps[j - 1].get("id"), str):
                    deps.append(steps[j - 1]["id"])
            if op["from"] not in deps:
                deps = deps + [op["from"]]
        elif isinstance(deps, list):
            deps = [d for d in deps if d != op["from"]]
        raw["depends_on"] = deps
        regions = [shape.core(j)]
        exempt = shape.entry_and_its_comments(("steps", j, "depends_on")) \
            if kind == "edge.remove" and ("steps", j, "depends_on") in shape.spans else set()
        return value, {}, regions + shape.alias_users(regions), exempt
    # field.set / field.unset
    if op["id"] is None:
        target = value
        regions = [(0, shape.core(0)[0]), (shape.core(len(shape.steps) - 1)[1], len(shape.lines))] \
            if shape.steps and not shape.flow_steps else everything
        base: tuple = ()
    else:
        j = shape.position(op["id"])
        target = steps[j]
        regions = [shape.core(j)]
        base = ("steps", j)
    path = op["path"]
    exempt: set[int] = set()  # comments that may go: inside a replaced value, with a removed entry
    full = base + tuple(path)
    if kind == "field.unset" and full in shape.spans:
        exempt = shape.entry_and_its_comments(full)
        parent, _ = get(shape.value, full[:-1])
        if isinstance(parent, dict) and len(parent) == 1 and len(full) > 1:  # the mapping is emptied
            exempt |= set(range(*shape.entry(full[:-1])))
    elif kind == "field.set":
        for cut in range(len(full), len(base), -1):
            if full[:cut] in shape.spans:
                if cut == len(full) or not isinstance(get(shape.value, full[:cut])[0], dict):
                    exempt = set(range(*shape.entry(full[:cut])))
                break
    if kind == "field.set":
        for key in path[:-1]:
            if not isinstance(target.get(key), dict):
                target[key] = {}  # only when the patch did not refuse it (bad_path) instead
            target = target[key]
        target[path[-1]] = op["value"]
    else:
        for key in path[:-1]:
            target = target.get(key) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target.pop(path[-1], None)
    return value, {}, regions + shape.alias_users(regions), exempt


def legitimate(shape: Shape, op: dict, error: PatchError) -> bool:
    """Whether a refusal holds for this document."""
    kind, code = op["op"], error.code
    if kind in ("step.add", "selection.paste") and not isinstance(shape.value.get("steps"), list):
        return True  # nowhere to put a step: any clear refusal will do
    if kind.startswith("edge.") and "depends_on" in (raw := shape.steps[shape.position(op["to"])]) \
            and not (isinstance(raw["depends_on"], list) and all(isinstance(d, str) for d in raw["depends_on"])):
        return True  # a depends_on that is not a list of ids: the patch may refuse to touch it
    if kind == "step.add" and code == "bad_id":
        return not STEP_ID.fullmatch(str(op["step"]["id"]))
    if kind == "edge.add":
        if code == "self_edge":
            return op["from"] == op["to"]
        if code == "cycle":
            return True  # checked below, on the refused edge's document
    if kind == "edge.remove" and code in ("implicit_edge", "bad_patch"):  # implicit, or no edge at all
        raw = shape.steps[shape.position(op["to"])]
        return not (isinstance(raw.get("depends_on"), list) and op["from"] in raw["depends_on"])
    if kind == "field.set" and code == "use_rename":
        return op["path"] == ["id"]
    if kind == "field.unset" and code == "bad_path" and not get(
            shape.value if op["id"] is None else shape.steps[shape.position(op["id"])], op["path"])[1]:
        return True  # unsetting what is not there
    if kind in ("field.set", "field.unset") and code == "bad_path" and "" in op["path"]:
        return True  # an empty key (`"": x` in variables) is not a path the editor sends
    if kind in ("field.set", "field.unset") and code == "bad_path":
        target = shape.value if op["id"] is None else shape.steps[shape.position(op["id"])]
        for key in op["path"][:-1]:
            if not isinstance(target, dict):
                return True
            target = target.get(key, {})
        return not isinstance(target, dict)
    return False


def would_cycle(shape: Shape, op: dict) -> bool:
    """Whether the edge closes a cycle: the validator's graph (implicit edges included) on the edited values."""
    from engine.validation import validate_source
    value, *_ = expected(shape, op, None)
    if shape.has_cycle:
        return True  # a cycle is there already: whether this edge makes another is not told here
    report = validate_source(yaml.safe_dump(value, allow_unicode=True, sort_keys=False))
    return any(p.code == "cycle" for p in report.problems)


def check(shape: Shape, op: dict, result) -> Shape:
    old, new = shape.text, result.text
    show = f"op {op!r}\n--- old\n{old}\n--- new\n{new}"
    # (f) the changes, in UTF-16 code units, turn the old text into the new one
    assert apply_changes(old, result.changes) == new, show
    # (d) the BOM and the line endings stay
    assert new.startswith(BOM) == old.startswith(BOM) and BOM not in new[1:], show
    if line_ending(old) in ("lf", "crlf"):
        assert line_ending(new) == line_ending(old), show
    # (e) it parses, and its values are the old ones with the patch's change, nothing else
    after = Shape(new)
    want, mapping, regions, exempt = expected(shape, op, result)
    assert same(normal(want, shape.sequential), normal(after.value, shape.sequential), mapping), show
    # (b) every line outside the patched blocks is unchanged
    if regions is None:  # a rename: only the id's tokens change, nothing moves
        assert len(after.lines) == len(shape.lines), show
        for a, b in zip(shape.lines, after.lines):
            assert differs_only_by_ids(a, b, mapping), f"{a!r} -> {b!r}\n{show}"
    else:
        assert only_regions_changed(shape.lines, after.lines, regions), f"regions {regions}\n{show}"
    # (c) every comment not inside a removed step or field survives
    want_comments = Counter(text for line, text in shape.comments if line not in exempt)
    have = Counter(text for _, text in after.comments)
    lost = want_comments - have
    assert not lost, f"lost comments {list(lost)}\n{show}"
    # a new step follows the file's indentation: its keys where the other steps' keys are
    columns = {shape.columns.get(("steps", i)) for i in range(len(shape.steps))} - {None}
    if op["op"] in ("step.add", "step.duplicate", "selection.paste") and len(columns) == 1 and not shape.flow_steps:
        added = [i for i, raw in enumerate(after.steps) if isinstance(raw, dict) and raw.get("id") not in shape.all_ids]
        assert {after.columns.get(("steps", i)) for i in added} <= columns, f"indentation {columns}\n{show}"
    return after


@contextlib.contextmanager
def no_hang(op: dict):
    """A patch that runs for a minute is a hang (a patch takes milliseconds): fail it instead of waiting forever."""
    def stop(signum, frame):
        raise AssertionError(f"apply_patch ran for {HANG_S} s: it hangs on {op!r}")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_sequence(text: str, data) -> None:
    shape = Shape(text)
    for _ in range(PATCHES):
        op = draw_op(shape, data)
        if op["op"] == "rename.back" and shape.holders[op["id"]] > 1:
            op["op"] = "step.rename"  # a repeated id cannot be renamed back: the other holder keeps it
        if op["op"] == "rename.back":  # (a) a rename there and back gives the same bytes
            with no_hang(op):
                there = apply_patch(shape.text, {"op": "step.rename", "id": op["id"], "to": op["to"]})
                back = apply_patch(there.text, {"op": "step.rename", "id": op["to"], "to": op["id"]})
            assert back.text == shape.text, f"rename {op} and back\n--- before\n{shape.text}\n--- after\n{back.text}"
            continue
        sent = {k: v for k, v in op.items() if not k.startswith("_")}
        try:
            with no_hang(op):
                result = apply_patch(shape.text, sent)
        except PatchError as error:
            assert legitimate(shape, op, error), f"{error.code}: {error.message}\nop {op!r}\n{shape.text}"
            if error.code == "cycle":
                assert would_cycle(shape, op), f"cycle refused wrongly: {op!r}\n{shape.text}"
            continue
        if op["op"] == "step.add":
            assert STEP_ID.fullmatch(str(op["step"]["id"])), f"a bad id was let in: {op!r}"
        if op["op"] == "field.set":
            assert op["path"] != ["id"], "setting `id` must be refused (use_rename)"
        raw = shape.steps[shape.position(op["to"])] if op["op"] == "edge.add" else None
        if raw is not None and isinstance(raw.get("depends_on"), list) and op["from"] in raw["depends_on"]:
            assert result.text == shape.text and result.changes == [], f"(a) no-op edge {op!r} changed the text"
        if op["op"] == "edge.add" and op["from"] != op["to"] and not shape.has_cycle:
            assert not would_cycle(shape, op), f"a cycle was let in: {op!r}"
        shape = check(shape, op, result)


@pytest.mark.parametrize("path", PARSED, ids=lambda p: f"{p.parent.name}/{p.stem}")
@SETTINGS
@given(data=st.data())
def test_random_patch_sequences_keep_every_byte_they_do_not_own(path, data):
    run_sequence(TEXTS[path], data)


@pytest.mark.parametrize("path", PARSED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_renaming_each_step_there_and_back_gives_the_same_bytes(path):
    text = TEXTS[path]
    shape = Shape(text)
    assert not re.search(token("zz_renamed"), text)
    for step_id in [i for i in shape.ids if shape.holders[i] == 1]:
        there = apply_patch(text, {"op": "step.rename", "id": step_id, "to": "zz_renamed"})
        assert there.text != text and apply_changes(text, there.changes) == there.text
        back = apply_patch(there.text, {"op": "step.rename", "id": "zz_renamed", "to": step_id})
        assert back.text == text, step_id


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab\n\r\t #:") + ["🚀", "é", "\ufeff", "\u2028"]), max_size=40),
       st.text(alphabet=st.sampled_from(list("ab\n\r\t #:") + ["🚀", "é", "\ufeff", "\u2028"]), max_size=40))
def test_changes_between_any_two_texts_replay_in_utf16_code_units(old, new):
    assert apply_changes(old, changes_between(old, new)) == new
    assert changes_between(old, old) == []
