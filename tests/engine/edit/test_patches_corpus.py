"""Every patch kind on realistic files (conformance cases, examples, the comment-rich corpus): it applies, or it
is refused for a reason that holds; what it applies keeps every untouched byte and validates as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.edit import PatchError, apply_patch, copy_steps
from engine.edit.source import Source
from engine.validation import STEP_ID, validate_source
from tests.engine.edit.test_patches import replay

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted([*(ROOT.parent / "shared" / "conformance" / "cases").glob("*.yaml"),
                *(ROOT / "examples").glob("*.yaml"), *(Path(__file__).parent / "corpus").glob("*.yaml")])


def parsed(path: Path) -> str | None:
    text = path.read_bytes().decode("utf-8")
    try:
        Source(text)
    except PatchError:
        return None
    return text


def ops_for(text: str) -> list[dict]:
    ids = [i for i in Source(text).index if STEP_ID.fullmatch(i)]
    ops: list[dict] = [{"op": "field.set", "id": None, "path": ["description"], "value": "Changed: yes"}]
    for i in ids[:3]:
        ops += [{"op": "field.set", "id": i, "path": ["name"], "value": "A new name"},
                {"op": "field.set", "id": i, "path": ["retry", "max_retries"], "value": 4},
                {"op": "field.unset", "id": i, "path": ["timeout"]},
                {"op": "step.rename", "id": i, "to": f"{i[:60]}_new"},
                {"op": "step.remove", "id": i},
                {"op": "step.duplicate", "id": i},
                {"op": "step.add", "step": {"id": "added_step", "agent": "mock", "command": "x"}, "after": i}]
        for j in ids[:3]:
            ops += [{"op": "edge.add", "from": i, "to": j}, {"op": "edge.remove", "from": i, "to": j}]
    if ids:
        ops.append({"op": "selection.paste", "yaml": copy_steps(text, ids[:3]), "after": None})
    return ops


REFUSALS = {"edge.add": {"cycle", "self_edge"}, "edge.remove": {"implicit_edge", "bad_patch"}}


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_patch_kind_applies_or_is_refused_for_a_reason(path):
    text = parsed(path)
    if text is None:
        with pytest.raises(PatchError) as caught:  # a hostile case: refused before any YAML library reads it
            apply_patch(path.read_bytes().decode("utf-8"), {"op": "step.remove", "id": "a"})
        assert caught.value.code in ("not_parsed", "too_large")
        return
    valid_before = validate_source(text).valid
    for op in ops_for(text):
        try:
            result = apply_patch(text, op)
        except PatchError as exc:
            assert exc.code in REFUSALS.get(op["op"], set()), (op, exc.code, exc.message)
            continue
        assert replay(text, result.changes) == result.text, op
        assert result.text.startswith("\ufeff") == text.startswith("\ufeff")
        assert ("\r\n" in result.text) == ("\r\n" in text)
        keeps_validity = op["op"] in ("step.rename", "step.duplicate") or (
            op["op"] == "field.set" and op["path"] == ["name"])
        if valid_before and keeps_validity:
            report = validate_source(result.text)
            assert report.valid, (op, report.problems[:3])
