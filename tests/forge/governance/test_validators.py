"""The checks the admin's forms and the API both apply to governance configuration."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from forge.governance.validators import kept_json, overridable_in_order


@pytest.mark.parametrize("value", [{"a": float("nan")}, ["x\x00y"], {"k\ud800": 1}, 2**64, [[[[]]]] * 1 + [1e309]])
def test_json_a_database_would_refuse_is_refused(value):
    with pytest.raises(ValidationError, match="this JSON cannot be stored"):
        kept_json(value)


@pytest.mark.parametrize("value", [{}, [], "text", 2**63 - 1, -2**63, 1.5, None, {"env": {"A": "b"}}])
def test_json_both_databases_keep_is_taken(value):
    kept_json(value)


def test_overridable_keys_come_in_agent_configs_order():
    assert overridable_in_order(["max_tokens", "model"]) == ["model", "max_tokens"]


@pytest.mark.parametrize("value", ["model", ["model", "model"], ["colour"], None])
def test_a_value_the_model_refuses_is_left_for_its_check(value):
    assert overridable_in_order(value) == value
