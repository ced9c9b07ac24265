"""engine/edit on big texts: a patch on 1 MiB and the patch request's engine work (issue 20 point 6: no worker
stalls past 2 s), the three-way merge
and the version diff of two 5,000-step versions with 30% of their lines changed.

    .venv/bin/python bench/edit_engine_bench.py

Prints CPU seconds (time.process_time: other work on the machine does not count) and wall seconds.
"""

from __future__ import annotations

import difflib
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.edit import PatchError, apply_patch, copy_steps, outline  # noqa: E402
from engine.edit.linediff import lines, unified_diff  # noqa: E402
from engine.edit.merge import merge3way  # noqa: E402
from engine.validation import validate_source  # noqa: E402


def anchored(n: int = 20_000) -> str:
    """n one-line steps, each holding an anchor."""
    return "name: big\nsteps:\n" + "".join(f"  - &a{i} {{id: s{i}, command: echo {i}}}\n" for i in range(n))


def realistic(n: int = 5_000) -> str:
    out = ["name: big\ndescription: a big workflow\nsteps:\n"]
    for i in range(n):
        dep = f"    depends_on: [s{i - 1}]\n" if i else ""
        out.append(f"  # step {i}\n  - id: s{i}\n    agent: shell\n"
                   f"    command: \"echo ${{s{max(i - 1, 0)}.stdout}} and some more text\"\n{dep}"
                   "    retry:\n      max_retries: 2\n      backoff_s: 1\n    timeout: 30s\n")
    return "".join(out)


def changed(text: str, share: float, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(f"    timeout: {rng.randrange(10**6)}s\n" if rng.random() < share else line for line in lines(text))


def timed(label: str, call) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    print(f"  {label:44s} cpu {time.process_time() - cpu:6.2f} s   wall {time.perf_counter() - wall:6.2f} s")


def refused(call) -> None:
    try:
        call()
    except PatchError:
        return
    raise AssertionError("expected a refusal")


def request(text: str, op: dict) -> None:
    """The engine's work in the editor's patch request (forge/console/views/editor_api.py): the patch, then the
    validation and the outline of the new text from the patch's own load of it."""
    patched = apply_patch(text, op)
    validate_source(patched.text, loaded=patched.loaded)
    outline(patched.text, patched.loaded)


def main() -> None:
    ops = [{"op": "field.set", "id": "s100", "path": ["timeout"], "value": "1m"},
           {"op": "step.add", "step": {"id": "zz", "agent": "shell", "command": "x"}, "after": "s10"},
           {"op": "step.rename", "id": "s10", "to": "renamed"},
           {"op": "step.remove", "id": "s10"},
           {"op": "edge.add", "from": "s1", "to": "s300"}]
    for name, text in (("20,000 anchored one-line steps", anchored()), ("5,000 realistic steps", realistic())):
        print(f"{name}: {len(text.encode()) / 2**20:.2f} MiB (target: every patch < 2 s wall)")
        for op in ops:
            timed(op["op"], lambda op=op: apply_patch(text, op))
        timed("outline", lambda: outline(text))
        for op in ops[:3]:
            timed(f"request: {op['op']} + validation + outline", lambda op=op: request(text, op))
    flow = "name: big\nsteps: [" + ", ".join(f"{{id: s{i}, agent: mock, command: x}}" for i in range(26_000)) + "]\n"
    print(f"26,000 steps in a one-line list: {len(flow.encode()) / 2**20:.2f} MiB (refusals: the bounded load, no more)")
    timed("copy_steps refused (no block list)", lambda: refused(lambda: copy_steps(flow, ["s1"])))
    aliased = "name: big\nsteps:\n  - {id: s0, command: &c x}\n" + "".join(
        f"  - {{id: s{i}, command: *c}}\n" for i in range(1, 9_000))
    print("9,000 steps, 8,999 of them aliasing the first one's command (near the alias bound)")
    timed("selection.remove of every other step", lambda: apply_patch(
        aliased, {"op": "selection.remove", "ids": [f"s{i}" for i in range(1, 9_000, 2)]}))
    timed("selection.remove of the anchor's step and 3,999 more", lambda: apply_patch(
        aliased, {"op": "selection.remove", "ids": [f"s{i}" for i in range(4_000)]}))
    many = "".join(f"- id: p{i}\n  agent: mock\n  command: x\n" for i in range(3_000))
    small = "name: small\nsteps:\n  - id: a\n    command: x\n"
    timed("selection.paste of 3,000 steps refused", lambda: refused(
        lambda: apply_patch(small, {"op": "selection.paste", "yaml": many, "after": None})))
    base = realistic()
    theirs, mine = changed(base, 0.3, 1), changed(base, 0.3, 2)
    print(f"two 5,000-step versions, 30% of lines changed at random ({len(lines(base)):,} lines)")
    timed("merge3way", lambda: merge3way(base, theirs, mine))
    timed("unified_diff (engine.edit.linediff)", lambda: unified_diff(base, theirs, "a", "b"))
    timed("difflib.unified_diff (before)", lambda: "".join(difflib.unified_diff(lines(base), lines(theirs))))


if __name__ == "__main__":
    main()
