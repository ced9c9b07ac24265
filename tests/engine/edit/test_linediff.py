"""engine.edit.linediff: a line diff whose opcodes rebuild the new text, as difflib's unified diff prints it."""

from __future__ import annotations

import difflib
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.edit.linediff import lines, matching_blocks, opcodes, unified_diff

LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "  - id: x\n", "\n", "# c\n", "end"]), max_size=30)


def rebuild(a: list[str], b: list[str]) -> list[str]:
    out = []
    for tag, i1, i2, j1, j2 in opcodes(a, b):
        assert (tag == "equal") == (a[i1:i2] == b[j1:j2] and i2 > i1)
        out += a[i1:i2] if tag == "equal" else b[j1:j2]
    return out


@settings(max_examples=300, deadline=None)
@given(LINES, LINES)
def test_the_opcodes_turn_any_lines_into_any_others_and_every_equal_run_is_equal(a, b):
    assert rebuild(a, b) == b
    blocks = matching_blocks(a, b)
    assert blocks[-1] == (len(a), len(b), 0)
    for (i, j, n), (i2, j2, _) in zip(blocks, blocks[1:]):
        assert a[i:i + n] == b[j:j + n] and i + n <= i2 and j + n <= j2


def test_a_one_line_change_is_one_hunk_as_difflib_prints_it():
    old = "".join(f"line {k}\n" for k in range(20))
    new = old.replace("line 9\n", "line nine\n")
    assert unified_diff(old, new, "v1", "v2") == "".join(
        difflib.unified_diff(lines(old), lines(new), "v1", "v2"))
    assert unified_diff(old, old, "v1", "v2") == ""


def test_a_missing_final_newline_is_said_not_glued_to_the_next_line():
    assert unified_diff("a\nb", "a\nc", "x", "y") == \
        "--- x\n+++ y\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"


def test_moved_and_repeated_lines_still_give_a_correct_diff():
    rng = random.Random(7)
    base = [f"  - id: s{k}\n" if k % 3 else "    agent: shell\n" for k in range(3000)]
    for _ in range(20):
        other = list(base)
        for _ in range(rng.randrange(1, 400)):
            k = rng.randrange(len(other))
            choice = rng.random()
            if choice < 0.3:
                other[k] = f"changed {rng.random()}\n"
            elif choice < 0.6:
                del other[k]
            else:
                other.insert(k, other[rng.randrange(len(other))])
        assert rebuild(base, other) == other
        assert rebuild(other, base) == base
