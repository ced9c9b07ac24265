"""A patch hands its check's load of the new text to the validation and the outline (one load instead of three on
the editor's patch request): what they answer from it is exactly what they answer from the text alone, over every
file the lossless properties edit, after each kind of patch, with validation run first on the shared load (so a
validator that changed the values it was given would show in the outline)."""

from __future__ import annotations

import pytest

from engine.edit import PatchError, apply_patch, outline
from engine.validation import validate_source
from engine.yamlload import load
from tests.engine.edit.test_lossless_properties import PARSED, TEXTS


def ops_for(text: str) -> list[dict]:
    ids = [s["id"] for s in load(text).value.get("steps") or [] if isinstance(s, dict) and isinstance(s.get("id"), str)]
    if not ids:
        return []
    return [{"op": "field.set", "id": ids[0], "path": ["timeout"], "value": "5m"},
            {"op": "step.rename", "id": ids[0], "to": "renamed_by_test"},
            {"op": "step.add", "step": {"id": "added_by_test", "agent": "mock", "command": "x"}, "after": ids[-1]},
            {"op": "step.remove", "id": ids[-1]}]


@pytest.mark.parametrize("path", PARSED, ids=lambda p: p.stem)
def test_validation_and_outline_from_the_patch_load_equal_a_fresh_reading(path):
    text = TEXTS[path]
    applied = 0
    for op in ops_for(text):
        try:
            patched = apply_patch(text, op)
        except PatchError:
            continue  # refused for its own reason (a flow-style list, an alias...): nothing is shared
        if not patched.changes:
            continue
        applied += 1
        assert patched.loaded is not None
        shared = validate_source(patched.text, loaded=patched.loaded).to_json()
        assert shared == validate_source(patched.text).to_json()
        assert outline(patched.text, patched.loaded) == outline(patched.text)
    assert applied or not ops_for(text), "no patch applied: the test checked nothing on this file"
