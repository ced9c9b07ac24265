"""A line diff that stays fast on big texts: the one used by merge3way and by the console's version diffs.

difflib.SequenceMatcher is quadratic when many lines change (14 s to merge two 5,000-step versions with
30% of their lines changed). Here, as in patience diff: the common head and tail are set aside, lines that
occur once in each side are matched in order (longest increasing run, n log n) and the gaps between those
anchors are diffed again the same way. A gap with no such anchor is handed to SequenceMatcher only while
it is small; a bigger one is reported replaced whole, so no input costs more than about n log n plus
bounded quadratic work.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Sequence

_LINE = re.compile(r"[^\n]*\n|[^\n]+")

# A gap without unique lines is given to SequenceMatcher below this many line pairs (its worst case).
SMALL_GAP = 250_000


def lines(text: str) -> list[str]:
    """Split on "\\n" only, each line keeping its ending (str.splitlines also splits on U+2028 and friends)."""
    return _LINE.findall(text)


def matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    """(i, j, n) runs where a[i:i+n] == b[j:j+n], in order, ending with (len(a), len(b), 0) (difflib's form)."""
    blocks: list[tuple[int, int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        a1, a2, b1, b2 = stack.pop()
        while a1 < a2 and b1 < b2 and a[a1] == b[b1]:  # the common head
            blocks.append((a1, b1, 1))
            a1, b1 = a1 + 1, b1 + 1
        tail = 0
        while a2 - tail > a1 and b2 - tail > b1 and a[a2 - tail - 1] == b[b2 - tail - 1]:
            tail += 1
        if tail:
            blocks.append((a2 - tail, b2 - tail, tail))
            a2, b2 = a2 - tail, b2 - tail
        if a1 == a2 or b1 == b2:
            continue
        anchors = _unique_in_order(a, a1, a2, b, b1, b2)
        if anchors:
            previous_i, previous_j = a1, b1
            for i, j in anchors:
                stack.append((previous_i, i, previous_j, j))
                blocks.append((i, j, 1))
                previous_i, previous_j = i + 1, j + 1
            stack.append((previous_i, a2, previous_j, b2))
        elif (a2 - a1) * (b2 - b1) <= SMALL_GAP:
            matcher = difflib.SequenceMatcher(None, a[a1:a2], b[b1:b2], autojunk=False)
            blocks.extend((a1 + i, b1 + j, n) for i, j, n in matcher.get_matching_blocks() if n)
        # else: replaced whole
    return _merged(sorted(blocks)) + [(len(a), len(b), 0)]


def _unique_in_order(a, a1: int, a2: int, b, b1: int, b2: int) -> list[tuple[int, int]]:
    """Pairs (i, j) of lines found exactly once in a[a1:a2] and once in b[b1:b2], the longest run of them
    increasing in both."""
    seen: dict[str, int] = {}
    for i in range(a1, a2):
        line = a[i]
        seen[line] = -1 if line in seen else i
    where: dict[str, int] = {}
    for j in range(b1, b2):
        line = b[j]
        if seen.get(line, -1) >= 0:
            where[line] = -1 if line in where else j
    pairs = sorted((seen[line], j) for line, j in where.items() if j >= 0)
    if not pairs:
        return []
    # longest increasing subsequence of j (patience sorting), keeping back links
    tails: list[int] = []  # tails[k]: the smallest j ending a run of length k + 1
    tail_at: list[int] = []  # index into pairs of that tail
    back = [-1] * len(pairs)
    for k, (_i, j) in enumerate(pairs):
        at = bisect.bisect_left(tails, j)
        back[k] = tail_at[at - 1] if at else -1
        if at == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[at] = j
            tail_at[at] = k
    run, k = [], tail_at[-1]
    while k >= 0:
        run.append(pairs[k])
        k = back[k]
    return run[::-1]


def _merged(blocks: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    for i, j, n in blocks:
        if out and out[-1][0] + out[-1][2] == i and out[-1][1] + out[-1][2] == j:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + n)
        else:
            out.append((i, j, n))
    return out


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib-style opcodes ("equal", "replace", "delete", "insert") from matching_blocks."""
    out = []
    i = j = 0
    for bi, bj, n in matching_blocks(a, b):
        tag = "replace" if i < bi and j < bj else "delete" if i < bi else "insert" if j < bj else ""
        if tag:
            out.append((tag, i, bi, j, bj))
        if n:
            out.append(("equal", bi, bi + n, bj, bj + n))
        i, j = bi + n, bj + n
    return out


class Matcher:
    """The part of difflib.SequenceMatcher's interface merge3 uses, on this diff."""

    def __init__(self, isjunk, a: Sequence[str], b: Sequence[str]):
        self.a, self.b = a, b

    def get_matching_blocks(self) -> list[tuple[int, int, int]]:
        return matching_blocks(self.a, self.b)

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:
        return opcodes(self.a, self.b)


def unified_diff(old: str, new: str, from_name: str = "a", to_name: str = "b", context: int = 3) -> str:
    """The unified diff of two texts (what `diff -u` prints, with difflib's headers and hunk ranges)."""
    a, b = lines(old), lines(new)
    codes = opcodes(a, b)
    if not any(tag != "equal" for tag, *_ in codes):
        return ""
    out = [f"--- {from_name}\n", f"+++ {to_name}\n"]
    for group in _groups(codes, context):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + _ended(line) for line in a[i1:i2])
                continue
            out.extend("-" + _ended(line) for line in a[i1:i2])
            out.extend("+" + _ended(line) for line in b[j1:j2])
    return "".join(out)


def _ended(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def _range(start: int, stop: int) -> str:
    """difflib's unified range: `start,length`, 1-based; an empty range names the line before it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if not length else start + 1},{length}"


def _groups(codes: list, n: int):
    """difflib.SequenceMatcher.get_grouped_opcodes on these opcodes: changes with n lines of context."""
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    group = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > n * 2:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group
