"""Three-way merge of a stale save: edits to different lines merge by themselves, same lines conflict."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.edit.merge import merge3way
from engine.validation import validate_source
from tests.engine.edit.documents import THREE_STEPS

BASE = THREE_STEPS


def edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_edits_to_different_steps_merge_by_themselves():
    theirs = edit(BASE, "echo one", "echo uno")
    mine = edit(BASE, "echo three", "echo tres")
    merged = merge3way(BASE, theirs, mine)
    assert merged.clean and merged.conflicts == []
    assert merged.text == BASE.replace("echo one", "echo uno").replace("echo three", "echo tres")
    assert validate_source(merged.text).valid


def test_edits_to_neighbouring_lines_merge_by_themselves():
    theirs = edit(BASE, "    agent: shell\n    command: echo two", "    agent: python\n    command: echo two")
    mine = edit(BASE, "command: echo two", "command: echo deux")
    merged = merge3way(BASE, theirs, mine)
    assert merged.clean
    assert "    agent: python\n    command: echo deux\n" in merged.text
    assert merged.text.count("\n") == BASE.count("\n")


def test_an_insertion_next_to_an_edit_merges():
    theirs = edit(BASE, "    depends_on: [fetch]\n", "    depends_on: [fetch]\n    timeout: 90s\n")
    mine = edit(BASE, "  - id: ship\n", "  - id: ship\n    name: Ship it\n")
    merged = merge3way(BASE, theirs, mine)
    assert merged.clean
    assert "    depends_on: [fetch]\n    timeout: 90s\n  - id: ship\n    name: Ship it\n" in merged.text


def test_a_step_removed_there_and_another_edited_here_merge():
    fetch = BASE[BASE.index("  - id: fetch\n"):BASE.index("  - id: build\n")]
    theirs = edit(BASE, fetch, "")
    theirs = edit(theirs, "    depends_on: [fetch]\n", "")
    mine = edit(BASE, "echo three", "echo tres")
    merged = merge3way(BASE, theirs, mine)
    assert merged.clean
    assert "id: fetch" not in merged.text and "echo tres" in merged.text
    assert validate_source(merged.text).valid


def test_the_same_edit_on_both_sides_is_taken_once():
    theirs = edit(BASE, "echo two", "echo 2")
    mine = edit(edit(BASE, "echo two", "echo 2"), "echo one", "echo 1")
    merged = merge3way(BASE, theirs, mine)
    assert merged.clean
    assert merged.text == edit(edit(BASE, "echo two", "echo 2"), "echo one", "echo 1")


def test_the_same_line_changed_two_ways_is_a_conflict_listed_and_marked():
    theirs = edit(edit(BASE, "echo two", "echo zwei"), "echo one", "echo uno")
    mine = edit(BASE, "echo two", "echo deux")
    merged = merge3way(BASE, theirs, mine)
    assert not merged.clean
    assert merged.conflicts == [{"base": "    command: echo two\n", "theirs": "    command: echo zwei\n",
                                 "mine": "    command: echo deux\n", "start_line": 10, "end_line": 14}]
    got = merged.text.split("\n")
    assert got[9:14] == ["<<<<<<< theirs", "    command: echo zwei", "=======", "    command: echo deux",
                         ">>>>>>> mine"]
    assert "echo uno" in merged.text  # the clean change beside it is merged all the same
    assert not validate_source(merged.text).valid  # a text with markers cannot be saved as it is


def test_two_different_insertions_at_the_same_place_conflict_and_two_equal_ones_do_not():
    step = "  - id: {0}\n    agent: shell\n    command: echo {0}\n"
    theirs, mine = BASE + step.format("late"), BASE + step.format("later")
    merged = merge3way(BASE, theirs, mine)
    assert [c["start_line"] for c in merged.conflicts] == [BASE.count("\n") + 1]
    assert merged.conflicts[0]["base"] == ""
    assert merged.conflicts[0]["theirs"].startswith("  - id: late\n")
    assert merge3way(BASE, theirs, theirs) == merge3way(BASE, theirs, theirs)
    assert merge3way(BASE, theirs, theirs).text == theirs


def test_one_side_unchanged_gives_the_other_side():
    mine = edit(BASE, "echo two", "echo deux")
    assert merge3way(BASE, BASE, mine).text == mine
    assert merge3way(BASE, mine, BASE).text == mine
    assert merge3way(BASE, BASE, BASE).text == BASE


def test_crlf_line_endings_and_the_byte_order_mark_are_kept():
    base = "\ufeff" + BASE.replace("\n", "\r\n")
    theirs = edit(base, "echo one", "echo uno")
    mine = edit(base, "echo three", "echo tres")
    merged = merge3way(base, theirs, mine)
    assert merged.clean
    assert merged.text == edit(edit(base, "echo one", "echo uno"), "echo three", "echo tres")
    conflict = merge3way(base, edit(base, "echo two", "echo 2"), edit(base, "echo two", "echo II"))
    assert conflict.text.startswith("\ufeffname: wf\r\n")
    assert conflict.text.count("\n") == conflict.text.count("\r\n")  # the markers too


def test_a_side_saved_with_other_line_endings_does_not_conflict_whole():
    mine = edit(BASE, "echo three", "echo tres").replace("\n", "\r\n")
    theirs = edit(BASE, "echo one", "echo uno")
    merged = merge3way(BASE, theirs, mine)
    assert merged.clean
    assert merged.text == edit(edit(BASE, "echo one", "echo uno"), "echo three", "echo tres").replace("\n", "\r\n")


def test_a_conflict_on_a_last_line_without_newline_keeps_markers_on_their_own_lines():
    base = BASE.rstrip("\n")
    merged = merge3way(base, base.replace("[build]", "[fetch]"), base.replace("[build]", "[fetch, build]"))
    assert merged.text.endswith("<<<<<<< theirs\n    depends_on: [fetch]\n=======\n"
                                "    depends_on: [fetch, build]\n>>>>>>> mine\n")
    assert merged.conflicts[0]["mine"] == "    depends_on: [fetch, build]"


def test_unicode_line_separators_inside_a_value_are_not_line_breaks():
    base = BASE.replace("echo one", "echo 'a\u2028b'")
    merged = merge3way(base, edit(base, "echo two", "echo 2"), edit(base, "echo three", "echo 3"))
    assert merged.clean and "echo 'a\u2028b'" in merged.text


def test_a_long_workflow_of_repeated_lines_still_merges_edits_far_apart():
    # `    agent: shell` is a third of the lines: difflib's "popular line" heuristic must not cost the matches
    steps = "".join(f"  - id: s{k}\n    agent: shell\n    command: echo {k}\n" for k in range(300))
    base = "name: wf\nsteps:\n" + steps
    theirs = edit(base, "echo 10\n", "echo ten\n")
    mine = edit(base, "echo 250\n", "echo two_fifty\n")
    merged = merge3way(base, theirs, mine)
    assert merged.clean
    assert merged.text == edit(theirs, "echo 250\n", "echo two_fifty\n")


@st.composite
def two_sides(draw):
    """A base of distinct lines; each line, and each place between lines, edited by one side at most. A line
    added between two lines the other side both changed would land inside their change: not drawn here."""
    names = ("theirs", "mine")
    base, theirs, mine, expected = [], [], [], []
    n = draw(st.integers(1, 30))
    owners = draw(st.lists(st.sampled_from([None, 0, 1]), min_size=n, max_size=n))  # who edits or deletes line k
    for k in range(n):
        line = f"line {k}\n"
        base.append(line)
        inserter = draw(st.sampled_from([None, 0, 1]))  # who adds a line before this one
        around = {owners[k - 1] if k else None, owners[k]}
        if inserter is not None and around != {1 - inserter}:
            new = f"new before {k} by {names[inserter]}\n"
            (theirs, mine)[inserter].append(new)
            expected.append(new)
        owner = owners[k]
        edit = draw(st.booleans())
        for side, out in enumerate((theirs, mine)):
            if side != owner:
                out.append(line)
            elif edit:
                out.append(f"line {k} by {names[side]}\n")
        if owner is None:
            expected.append(line)
        elif edit:
            expected.append(f"line {k} by {names[owner]}\n")
    return "".join(base), "".join(theirs), "".join(mine), "".join(expected)


@settings(max_examples=300, deadline=None)
@given(two_sides())
def test_edits_that_never_touch_the_same_line_always_merge_cleanly(case):
    base, theirs, mine, expected = case
    merged = merge3way(base, theirs, mine)
    assert merged.clean, merged.conflicts
    assert merged.text == expected


def test_a_chain_of_overlapping_edits_is_one_conflict_holding_both_sides_whole():
    # theirs rewrites lines 0-2, 4-6, ...; mine 2-4, 6-8, ...: each edit overlaps the next, so they are one
    # group (its end is kept as it grows: recomputing it per edit was quadratic, 120 s on a 1 MiB text)
    base = [f"l{i}\n" for i in range(40)]
    theirs = [f"t{i}\n" if i % 4 != 3 else line for i, line in enumerate(base)]
    mine = [f"m{i}\n" if i % 4 != 1 else line for i, line in enumerate(base)]
    merged = merge3way("".join(base), "".join(theirs), "".join(mine))
    assert [(c["base"], c["theirs"], c["mine"]) for c in merged.conflicts] == \
        [("".join(base), "".join(theirs), "".join(mine))]
    assert merged.text == "<<<<<<< theirs\n" + "".join(theirs) + "=======\n" + "".join(mine) + ">>>>>>> mine\n"
