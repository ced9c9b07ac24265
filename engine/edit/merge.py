"""Three-way merge of a workflow's text, for a save based on an older version than the latest.

Lines are compared whole, line ending included, with merge3's sync regions; where both sides changed a region,
their edits are compared hunk by hunk against the base, so edits to different lines (even neighbouring ones) still
merge by themselves and only edits to the same lines conflict. A conflict is written into the text between
markers (theirs first, then mine) so the merged text cannot be saved by mistake before it is resolved, and is
listed with its three chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from merge3 import Merge3

from engine.edit.linediff import Matcher, lines, opcodes

BOM = "\ufeff"
MARK_THEIRS, MARK_SPLIT, MARK_MINE = "<<<<<<< theirs", "=======", ">>>>>>> mine"


@dataclass(frozen=True)
class Merged:
    text: str
    conflicts: list[dict] = field(default_factory=list)  # {"base", "theirs", "mine", "start_line", "end_line"}
    clean: bool = True


def _eol(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _like(text: str, eol: str) -> str:
    """The text with every line ending as `eol` (so a side saved with other endings does not conflict whole)."""
    if _eol(text) == eol:
        return text
    return text.replace("\r\n", "\n") if eol == "\n" else re.sub(r"(?<!\r)\n", "\r\n", text)


def _hunks(base: list[str], side: list[str]) -> list[tuple[int, int, list[str]]]:
    """The side's edits as (base start, base end, new lines)."""
    return [(i1, i2, side[j1:j2]) for tag, i1, i2, j1, j2 in opcodes(base, side) if tag != "equal"]


def _clash(one: tuple, other: tuple) -> bool:
    (a1, a2, _), (b1, b2, _) = one, other
    if a1 == a2 and b1 == b2:
        return a1 == b1  # two insertions at the same place: their order is unknown
    if a1 == a2:
        return b1 < a1 < b2  # an insertion inside the other's replaced lines
    if b1 == b2:
        return a1 < b1 < a2
    return a1 < b2 and b1 < a2  # both replaced some same line


def _region(base: list[str], theirs: list[str], mine: list[str]):
    """A region both sides changed, as ("ok", lines) and ("conflict", base, theirs, mine) pieces in order."""
    edits = [(h, 0) for h in _hunks(base, theirs)] + [(h, 1) for h in _hunks(base, mine)]
    edits.sort(key=lambda e: (e[0][0], e[0][1], e[1]))
    groups: list[list] = []  # edits that clash with one another, transitively, in base order
    group_end = 0  # where the last group's edits end in base, kept as it grows (not recomputed per edit)
    for edit in edits:
        if groups and (edit[0][0] < group_end or any(_clash(edit[0], other[0]) for other in groups[-1])):
            groups[-1].append(edit)
            group_end = max(group_end, edit[0][1])
        else:
            groups.append([edit])
            group_end = edit[0][1]
    at = 0
    for group in groups:
        start = min(h[0] for h, _ in group)
        end = max(h[1] for h, _ in group)
        if start > at:
            yield "ok", base[at:start]
        sides = {side for _, side in group}
        if len(sides) == 1:
            yield "ok", _apply(base, start, end, [h for h, _ in group])
        else:
            picked = [_apply(base, start, end, [h for h, side in group if side == s]) for s in (0, 1)]
            if picked[0] == picked[1]:
                yield "ok", picked[0]
            else:
                yield "conflict", base[start:end], picked[0], picked[1]
        at = end
    if at < len(base):
        yield "ok", base[at:]


def _apply(base: list[str], start: int, end: int, hunks: list[tuple]) -> list[str]:
    """base[start:end] with one side's hunks (all inside it) applied."""
    out, at = [], start
    for i1, i2, new in sorted(hunks, key=lambda h: (h[0], h[1])):
        out += base[at:i1] + new
        at = i2
    return out + base[at:end]


def merge3way(base: str, theirs: str, mine: str) -> Merged:
    """Merge the changes base -> theirs and base -> mine.

    Mine decides the line endings and the byte-order mark (the other texts are read in mine's style first).
    Each conflict says its three chunks and the 1-based lines of its markers in the merged text.
    """
    bom = BOM if mine.startswith(BOM) else ""
    eol = _eol(mine)
    base, theirs, mine = (_like(t.removeprefix(BOM), eol) for t in (base, theirs, mine))
    if theirs == mine or base == theirs:
        return Merged(bom + mine)
    if base == mine:
        return Merged(bom + theirs)
    z, a, b = lines(base), lines(theirs), lines(mine)
    out: list[str] = []
    conflicts: list[dict] = []
    for region in Merge3(z, a, b, sequence_matcher=Matcher).merge_regions():
        kind = region[0]
        if kind == "unchanged":
            out += z[region[1]:region[2]]
        elif kind in ("a", "same"):
            out += a[region[1]:region[2]]
        elif kind == "b":
            out += b[region[1]:region[2]]
        else:
            _, iz, zend, ia, aend, ib, bend = region
            for piece in _region(z[iz:zend], a[ia:aend], b[ib:bend]):
                if piece[0] == "ok":
                    out += piece[1]
                else:
                    _mark(out, conflicts, *piece[1:], eol)
    return Merged(bom + "".join(out), conflicts, not conflicts)


def _mark(out: list[str], conflicts: list[dict], base: list[str], theirs: list[str], mine: list[str],
          eol: str) -> None:
    """Write one conflict between markers, each on a line of its own."""
    if out and not out[-1].endswith("\n"):
        out[-1] += eol
    start = len(out) + 1
    block = [MARK_THEIRS + eol, *_closed(theirs, eol), MARK_SPLIT + eol, *_closed(mine, eol), MARK_MINE + eol]
    out += block
    conflicts.append({"base": "".join(base), "theirs": "".join(theirs), "mine": "".join(mine),
                      "start_line": start, "end_line": start + len(block) - 1})


def _closed(chunk: list[str], eol: str) -> list[str]:
    if chunk and not chunk[-1].endswith("\n"):
        return chunk[:-1] + [chunk[-1] + eol]
    return chunk
