"""CodeMirror changes: `{"from", "to", "insert"}` in UTF-16 code units of the old text (JavaScript indexes)."""

from __future__ import annotations

from engine.edit.linediff import opcodes


class _Utf16:
    """Python indexes of one text as UTF-16 indexes, asked in increasing order (one pass in all)."""

    def __init__(self, text: str):
        self.text, self.at, self.extra = text, 0, 0
        self.astral = not text.isascii() and any(ord(ch) > 0xFFFF for ch in text)

    def __call__(self, index: int) -> int:
        if self.astral:
            if index < self.at:  # not in order: count again from the start
                self.at, self.extra = 0, 0
            self.extra += sum(1 for ch in self.text[self.at:index] if ord(ch) > 0xFFFF)
            self.at = index
        return index + self.extra


def utf16_changes(old: str, splices: list[tuple[int, int, str]], shift: int = 0) -> list[dict]:
    """Sorted, non-overlapping splices of `old` (Python indexes) as CodeMirror changes, each trimmed to the
    characters that really change; `shift` is added (a BOM before `old`, one code unit)."""
    out = []
    utf16 = _Utf16(old)
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
        out.append({"from": utf16(a) + shift, "to": utf16(b) + shift,
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
    a_at = [0]
    for line in a_lines:
        a_at.append(a_at[-1] + len(line))
    b_at = [0]
    for line in b_lines:
        b_at.append(b_at[-1] + len(line))
    for tag, i1, i2, j1, j2 in opcodes(a_lines, b_lines):  # fast on any size (engine.edit.linediff)
        if tag != "equal":
            splices.append((head + a_at[i1], head + a_at[i2], new_mid[b_at[j1]:b_at[j2]]))
    return utf16_changes(old, splices)
