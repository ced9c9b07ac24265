"""CodeMirror changes: `{"from", "to", "insert"}` in UTF-16 code units of the old text (JavaScript indexes)."""

from __future__ import annotations

import difflib


def _utf16(text: str, index: int) -> int:
    return index + sum(1 for ch in text[:index] if ord(ch) > 0xFFFF)


def utf16_changes(old: str, splices: list[tuple[int, int, str]], shift: int = 0) -> list[dict]:
    """Sorted, non-overlapping splices of `old` (Python indexes) as CodeMirror changes, each trimmed to the
    characters that really change; `shift` is added (a BOM before `old`, one code unit)."""
    out = []
    for start, end, text in splices:
        removed = old[start:end]
        head = 0
        limit = min(len(removed), len(text))
        while head < limit and removed[head] == text[head]:
            head += 1
        tail = 0
        while tail < limit - head and removed[len(removed) - 1 - tail] == text[len(text) - 1 - tail]:
            tail += 1
        if head == len(removed) == len(text):
            continue
        a, b = start + head, end - tail
        out.append({"from": _utf16(old, a) + shift, "to": _utf16(old, b) + shift,
                    "insert": text[head:len(text) - tail]})
    return out


def changes_between(old: str, new: str) -> list[dict]:
    """The changes that turn `old` into `new`, line by line between the common head and tail."""
    if old == new:
        return []
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    head = old.rfind("\n", 0, head) + 1  # whole lines, so the line matcher below sees them aligned
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    old_mid, new_mid = old[head:len(old) - tail], new[head:len(new) - tail]
    a_lines = old_mid.splitlines(keepends=True)
    b_lines = new_mid.splitlines(keepends=True)
    splices = []
    if len(a_lines) * len(b_lines) > 4_000_000:  # a huge rewrite: one change, not a quadratic diff
        splices.append((head, len(old) - tail, new_mid))
    else:
        a_at = [0]
        for line in a_lines:
            a_at.append(a_at[-1] + len(line))
        b_at = [0]
        for line in b_lines:
            b_at.append(b_at[-1] + len(line))
        matcher = difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                splices.append((head + a_at[i1], head + a_at[i2], new_mid[b_at[j1]:b_at[j2]]))
    return utf16_changes(old, splices)
