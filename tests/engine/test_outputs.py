"""Agent outputs (spec section 7 and 13): coercion, then validation against the declared schema."""

import pytest

from engine.model import OutputSchema
from engine.outputs import (
    check_value, coerce, coerce_outputs, default_value, round_half_away, validate_outputs,
)


def schema(**fields):
    return {name: OutputSchema.model_validate(spec) for name, spec in fields.items()}


# -- coercion ------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    (2.5, 3), (-2.5, -3), (0.5, 1), (-0.5, -1), (1.5, 2), (-1.5, -2), (2.4, 2), (-2.6, -3), (3.0, 3),
    (0.49999999999999994, 0), (4503599627370497.0, 4503599627370497), (-4503599627370497.0, -4503599627370497),
])
def test_rounding_takes_halves_away_from_zero(value, expected):
    assert round_half_away(value) == expected


@pytest.mark.parametrize("value, expected", [
    ("7.5", 8), ("-7.5", -8), ("42", 42), (" 42 ", 42), ("+5", 5), ("7.0", 7), ("1e3", 1000),
    (2.5, 3), (-2.5, -3), (7.2, 7), (7, 7),
])
def test_an_integer_is_coerced_from_a_numeric_string_or_a_float_rounding_halves_away(value, expected):
    result = coerce(value, "integer")
    assert result == expected and type(result) is int


@pytest.mark.parametrize("value, expected", [
    ("3.25", 3.25), (" -1.5 ", -1.5), ("10", 10), ("2e2", 200.0), (".5", 0.5), (4, 4), (2.5, 2.5),
])
def test_a_number_is_coerced_from_a_numeric_string_and_keeps_its_fraction(value, expected):
    assert coerce(value, "number") == expected


@pytest.mark.parametrize("value", ["true", "TRUE", "True", "yes", "YES", "Yes", " true ",
                                   {"result": True}, {"value": "yes"}, {"verified": "TRUE"},
                                   {"passed": True}, {"status": "Yes"}, {"result": {"value": "true"}}])
def test_a_boolean_is_coerced_to_true_from_case_variants_and_from_each_result_key(value):
    assert coerce(value, "boolean") is True


@pytest.mark.parametrize("value", ["false", "FALSE", "False", "no", "NO", "No", " no ",
                                   {"result": False}, {"value": "no"}, {"verified": "false"},
                                   {"passed": "No"}, {"status": False}])
def test_a_boolean_is_coerced_to_false_from_case_variants_and_from_each_result_key(value):
    assert coerce(value, "boolean") is False


@pytest.mark.parametrize("value, expected", [
    ("x", ["x"]), (5, [5]), ({"a": 1}, [{"a": 1}]), (True, [True]), ([1, 2], [1, 2]), ([], []),
])
def test_an_array_is_coerced_by_wrapping_a_single_value(value, expected):
    assert coerce(value, "array") == expected


@pytest.mark.parametrize("value, expected", [
    ({"a": 1, "b": [True, None]}, '{"a": 1, "b": [true, null]}'),
    ([1, "x"], '[1, "x"]'),
    ({"name": "café"}, '{"name": "café"}'),
    (42, "42"), (-3, "-3"), (2.5, "2.5"), (True, "true"), (False, "false"),
    ("already text", "already text"),
])
def test_a_string_is_coerced_from_objects_lists_numbers_and_booleans_json_like(value, expected):
    assert coerce(value, "string") == expected


@pytest.mark.parametrize("value, type_name", [
    ("abc", "integer"), ("12abc", "number"), ("1,000", "number"), ("", "integer"), (True, "integer"),
    ([1], "number"), ("maybe", "boolean"), ("1", "boolean"), (1, "boolean"), ({"other": True}, "boolean"),
    ({"result": "perhaps"}, "boolean"), ("text", "object"), (5, "object"), ({"a": 1}, "integer"),
    ("9" * 5000, "integer"), ("-" + "9" * 5000, "number"),  # more digits than int() reads
])
def test_a_value_that_cannot_be_coerced_is_left_unchanged_and_then_fails_validation(value, type_name):
    coerced = coerce(value, type_name)
    assert coerced == value and type(coerced) is type(value)
    assert validate_outputs({"out": coerced}, schema(out={"type": type_name})) is not None


def test_coerce_outputs_coerces_declared_fields_and_keeps_undeclared_ones_as_returned():
    outputs = {"score": "7.5", "ok": "yes", "tags": "one", "extra": "42", "nested": {"a": 1}}
    result = coerce_outputs(outputs, schema(score={"type": "integer"}, ok={"type": "boolean"},
                                            tags={"type": "array"}, missing={"type": "string"}))
    assert result == {"score": 8, "ok": True, "tags": ["one"], "extra": "42", "nested": {"a": 1}}
    assert outputs["score"] == "7.5"  # the agent's own dict is not changed


def test_coerce_outputs_leaves_a_field_without_a_declared_type_alone():
    assert coerce_outputs({"v": "7"}, schema(v={})) == {"v": "7"}


# -- validation ----------------------------------------------------------------


def test_outputs_are_required_by_default():
    problem = validate_outputs({}, schema(summary={"type": "string"}))
    assert problem is not None and "summary" in problem and "required" in problem


def test_a_null_required_output_counts_as_missing():
    assert "required" in validate_outputs({"summary": None}, schema(summary={"type": "string"}))


def test_a_missing_optional_output_is_fine():
    assert validate_outputs({}, schema(note={"type": "string", "required": False})) is None
    assert validate_outputs({"note": None}, schema(note={"type": "string", "required": False})) is None


def test_a_present_optional_output_is_still_checked():
    assert validate_outputs({"note": 5}, schema(note={"type": "string", "required": False})) is not None


def test_undeclared_outputs_are_kept_and_never_make_validation_fail():
    assert validate_outputs({"a": "x", "surprise": [1, {"b": 2}]}, schema(a={"type": "string"})) is None


@pytest.mark.parametrize("type_name, good, bad", [
    ("string", "x", 5), ("number", 2.5, "2.5"), ("number", 3, True), ("integer", 3, 3.5),
    ("integer", 3, False), ("boolean", True, 1), ("boolean", False, "false"),
    ("object", {"a": 1}, [1]), ("array", [1], {"a": 1}), ("array", [], "x"),
])
def test_a_value_of_the_wrong_type_fails_validation_naming_the_field(type_name, good, bad):
    declared = schema(field={"type": type_name})
    assert validate_outputs({"field": good}, declared) is None
    problem = validate_outputs({"field": bad}, declared)
    assert problem is not None and "field" in problem


@pytest.mark.parametrize("value, valid", [
    ("COMPLETE", True), ("FAILED", True), ("COMPLETE -- all checks passed", True), ("COMPLETE: ok", True),
    ("COMPLETED", False), ("COMPLETE_PARTIAL", False), ("complete", False), ("PENDING", False),
])
def test_enum_accepts_a_value_or_the_value_followed_by_a_non_word_character(value, valid):
    declared = schema(verdict={"type": "string", "enum": ["COMPLETE", "FAILED"]})
    assert (validate_outputs({"verdict": value}, declared) is None) is valid


def test_an_enum_prefix_match_keeps_the_value_as_returned():
    declared = schema(verdict={"type": "string", "enum": ["COMPLETE"]})
    outputs = coerce_outputs({"verdict": "COMPLETE -- ok"}, declared)
    assert outputs == {"verdict": "COMPLETE -- ok"}
    assert validate_outputs(outputs, declared) is None


@pytest.mark.parametrize("value, valid", [(1, True), (2.0, True), (3, False), (True, False), ("1", False)])
def test_a_numeric_enum_compares_by_value_without_conversions(value, valid):
    assert (check_value(value, OutputSchema.model_validate({"enum": [1, 2]})) is None) is valid


@pytest.mark.parametrize("value, valid", [(0, True), (5, True), (10, True), (-0.1, False), (10.5, False),
                                          (7.25, True)])
def test_minimum_and_maximum_are_inclusive_bounds(value, valid):
    declared = schema(score={"type": "number", "minimum": 0, "maximum": 10})
    assert (validate_outputs({"score": value}, declared) is None) is valid


@pytest.mark.parametrize("value, valid", [("ab", True), ("abcd", True), ("a", False), ("abcde", False),
                                          ("", False), ("éé", True)])
def test_min_length_and_max_length_count_characters(value, valid):
    declared = schema(code={"type": "string", "minLength": 2, "maxLength": 4})
    assert (validate_outputs({"code": value}, declared) is None) is valid


@pytest.mark.parametrize("pattern, value, valid", [
    (r"\d", "abc1def", True), (r"\d", "abc", False), (r"^ab", "abc", True), (r"^bc", "abc", False),
    (r"c$", "abc", True), (r"^[A-Z]{3}-\d+$", "ABC-12", True), (r"^[A-Z]{3}-\d+$", "ABC-12x", False),
])
def test_pattern_searches_the_value_like_re_search(pattern, value, valid):
    declared = schema(ref={"type": "string", "pattern": pattern})
    assert (validate_outputs({"ref": value}, declared) is None) is valid


@pytest.mark.parametrize("items, bad_index", [
    ([1, 2, "three", "four"], 2), (["zero", 1], 0), ([1, 2, 3.5], 2), ([1, True], 1),
])
def test_items_type_reports_the_index_of_the_first_bad_item(items, bad_index):
    problem = validate_outputs({"ids": items}, schema(ids={"type": "array", "items": {"type": "integer"}}))
    assert problem is not None and f"item {bad_index} " in problem


def test_an_array_whose_items_all_fit_passes():
    assert validate_outputs({"ids": [1, 2, 3]}, schema(ids={"type": "array", "items": {"type": "integer"}})) is None
    assert validate_outputs({"ids": []}, schema(ids={"type": "array", "items": {"type": "string"}})) is None


def test_a_single_value_is_wrapped_then_its_item_type_is_checked():
    declared = schema(tags={"type": "array", "items": {"type": "string"}})
    assert validate_outputs(coerce_outputs({"tags": "urgent"}, declared), declared) is None
    assert "item 0" in validate_outputs(coerce_outputs({"tags": 5}, declared), declared)


def test_coercion_then_validation_accepts_what_an_llm_typically_returns():
    declared = schema(risk={"type": "integer", "minimum": 0, "maximum": 10}, approved={"type": "boolean"},
                      summary={"type": "string", "minLength": 1}, status={"type": "string", "enum": ["DONE"]})
    outputs = coerce_outputs({"risk": "6.5", "approved": {"verified": "Yes"}, "summary": {"points": 3},
                              "status": "DONE - nothing left"}, declared)
    assert outputs == {"risk": 7, "approved": True, "summary": '{"points": 3}', "status": "DONE - nothing left"}
    assert validate_outputs(outputs, declared) is None


@pytest.mark.parametrize("type_name, expected", [
    ("string", ""), ("number", 0), ("integer", 0), ("boolean", False), ("array", []), ("object", {}),
    (None, ""),
])
def test_default_value_is_the_empty_value_of_each_type(type_name, expected):
    value = default_value(type_name)
    assert value == expected and type(value) is type(expected)


def test_default_value_gives_a_fresh_container_each_time():
    first = default_value("array")
    first.append(1)
    assert default_value("array") == []
