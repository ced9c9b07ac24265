"""The shapes the workflow and draft operations share: a version's metadata, a validator's problem, a text's state
in the editor, and input fields that take exactly one JSON type (DRF's would turn 5 into "5" or "5" into 5)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from forge.workflows.services import MAX_SOURCE_BYTES

MAX_NUMBER = 2**31 - 1  # a version number is a PositiveIntegerField


class Text(serializers.CharField):
    """A JSON string kept exactly as sent: no trimming, blank allowed, never a number turned into one."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class YamlText(Text):
    """A workflow's YAML: at most MAX_SOURCE_BYTES of UTF-8 (the body's own bound is twice that)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", f"the workflow's YAML text, at most {MAX_SOURCE_BYTES:,} bytes of UTF-8")
        super().__init__(**kwargs)


class VersionOut(serializers.Serializer):
    """One saved version's metadata (its text is the yaml operation's)."""

    workflow = serializers.CharField(source="workflow.name")
    number = serializers.IntegerField()
    content_hash = serializers.CharField(help_text="SHA-256 of the text's UTF-8 bytes, hex")
    message = serializers.CharField(help_text="what the person who saved it said of it")
    author = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()


class ProblemOut(serializers.Serializer):
    """One problem (or warning) the validator found, as `forge validate --json` prints it."""

    code = serializers.CharField()
    message = serializers.CharField()
    step = serializers.CharField(allow_null=True)
    line = serializers.IntegerField(allow_null=True)
    column = serializers.IntegerField(allow_null=True)


class EditorProblemOut(ProblemOut):
    severity = serializers.ChoiceField(choices=["error", "warning"])


class TextStateOut(serializers.Serializer):
    """What the editor redraws from after a text changed: its problems, validity and outline."""

    problems = EditorProblemOut(many=True, help_text="errors then warnings")
    valid = serializers.BooleanField()
    outline = serializers.JSONField(help_text="the text's steps and edges, as the editor's graph draws them")
    dirty = serializers.BooleanField(help_text="whether the draft holds text no version has")


_STEP_ID = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$"}
_AFTER = {"type": ["string", "null"], "description": "the step to insert after; the end when left out or null"}
_FIELD_OF = {"type": ["string", "null"], "description": "the step whose field it is; null for the document's own"}
_PATH = {"type": "array", "minItems": 1,
         "items": {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]},
         "description": 'keys and list indexes from the step (or the document), e.g. ["retry", "max_retries"]'}
_EDGE = ({"from": _STEP_ID, "to": _STEP_ID}, {})
# op -> (its required fields, its optional fields): the patch engine's own (engine/edit/patches.py), which checks
# every patch; a test keeps the two the same.
PATCH_FIELDS: dict[str, tuple[dict, dict]] = {
    "step.add": ({"step": {"type": "object", "description": "the new step's fields, its id among them"}},
                 {"after": _AFTER}),
    "step.remove": ({"id": _STEP_ID}, {}),
    "selection.remove": ({"ids": {"type": "array", "minItems": 1, "items": _STEP_ID}}, {}),
    "step.rename": ({"id": _STEP_ID, "to": _STEP_ID}, {}),
    "step.duplicate": ({"id": _STEP_ID}, {}),
    "edge.add": _EDGE,
    "edge.remove": _EDGE,
    "field.set": ({"id": _FIELD_OF, "path": _PATH, "value": {"description": "any JSON value"}}, {}),
    "field.unset": ({"id": _FIELD_OF, "path": _PATH}, {}),
    "selection.paste": ({"yaml": {"type": "string", "description": "the steps, as YAML"}}, {"after": _AFTER}),
}


def _patch_schema(op: str, required: dict, optional: dict) -> dict:
    return {"type": "object", "title": op, "additionalProperties": False, "required": ["op", *required],
            "properties": {"op": {"const": op}, **required, **optional}}


@extend_schema_field({"oneOf": [_patch_schema(op, *fields) for op, fields in PATCH_FIELDS.items()]})
class PatchOp(serializers.DictField):
    """A typed patch: an object naming its `op`, checked field by field by the patch engine as it applies."""
