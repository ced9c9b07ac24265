"""Every body field of every operation takes exactly one JSON type: DRF's own fields turn 30 into "30" and "30" into
30 (a script's wrong type would pass unseen), so each `Input` is built of Forge's fields (forge/api/fields.py and
the workflow texts), with lists and objects holding them."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from forge.api import fields as strict
from forge.api.serializers_workflows import PatchOp, Text
from tests.forge.api.infra import bearer, post
from tests.forge.api.operations import api_operations

STRICT = (strict.Words, strict.Whole, strict.Number, strict.Flag, strict.Choice, strict.KeptJson, Text, PatchOp)
INPUTS = sorted({(str(op), op.view.Input) for op in api_operations() if getattr(op.view, "Input", None)},
                key=lambda pair: pair[0])


def lax_fields(serializer, where: str = ""):
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        yield from _lax(field, f"{where}{name}")


def _lax(field, where: str):
    if isinstance(field, serializers.Serializer):
        yield from lax_fields(field, where + ".")
    elif isinstance(field, serializers.ListSerializer):
        yield from lax_fields(field.child, where + "[].")
    elif isinstance(field, (serializers.ListField, serializers.DictField)) and not isinstance(field, PatchOp):
        yield from _lax(field.child, where + "[]")
    elif isinstance(field, serializers.JSONField) and where.startswith("args[]"):
        return  # a run's arguments: any JSON the databases keep (validate_args), judged by the workflow's `args`
    elif not isinstance(field, STRICT):
        yield f"{where}: {type(field).__name__}"


def test_the_walk_finds_the_bodies():
    assert len(INPUTS) >= 25
    assert {"POST /api/v1/me/tokens", "POST /api/v1/runs", "POST /api/v1/auth/token"} <= {op for op, _ in INPUTS}


@pytest.mark.parametrize(("operation", "Input"), INPUTS, ids=[op for op, _ in INPUTS])
def test_every_body_field_takes_one_json_type(operation, Input):
    assert list(lax_fields(Input())) == []


@pytest.mark.django_db
@pytest.mark.parametrize("body", [{"name": 7, "scopes": ["runs:read"]},
                                  {"name": "ci", "scopes": ["runs:read"], "days": "30"},
                                  {"name": "ci", "scopes": [1]}, {"name": "ci", "scopes": ["runs:read"], "days": 30.0}])
def test_a_token_asked_with_a_wrong_type_is_refused_and_none_is_made(operator, body):
    client = bearer(operator)
    before = operator.api_tokens.count()
    answer = post(client, "/api/v1/me/tokens", body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["code"] == "invalid_fields"
    assert operator.api_tokens.count() == before


@pytest.mark.django_db
def test_a_token_asked_with_each_kind_of_valid_value_is_made(operator):
    answer = post(bearer(operator), "/api/v1/me/tokens", {"name": "  ci  ", "scopes": ["runs:read"], "days": 1})
    assert answer.status_code == 201, answer.content
    assert answer.json()["name"] == "ci" and answer.json()["secret"].startswith("forge_pat_")
