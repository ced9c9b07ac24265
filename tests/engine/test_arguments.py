"""A run's arguments are JSON: numbers JSON cannot carry are refused with the argument's name."""

import pytest

from engine.arguments import ArgumentsInvalid, resolve_args
from engine.validation import load_workflow

DOC = "name: a\nargs:\n  n: {type: number}\n  meta: {type: object}\nsteps:\n  - {id: s, agent: mock, command: x}\n"


def document():
    return load_workflow(DOC).document


@pytest.mark.parametrize("given", [{"n": "1e999"}, {"meta": '{"x": NaN}'}, {"meta": '{"x": [-Infinity]}'}])
def test_a_number_that_is_not_finite_is_refused(given):
    with pytest.raises(ArgumentsInvalid, match="not finite"):
        resolve_args(document(), given, from_text=True)


def test_finite_numbers_pass():
    assert resolve_args(document(), {"n": "1e300", "meta": '{"x": 1.5}'}, from_text=True) == {
        "n": 1e300, "meta": {"x": 1.5}}


KINDS = ("name: a\nargs:\n  whole: {type: integer}\n  amount: {type: number}\n  text: {type: string}\n"
         "  meta: {type: object}\n  items: {type: array}\nsteps:\n  - {id: s, agent: mock, command: x}\n")
BEYOND = "holds an integer beyond 64 bits"


def kinds():
    return load_workflow(KINDS).document


@pytest.mark.parametrize("given", [{"whole": "9" * 5000}, {"whole": "9" * 4000}, {"whole": str(2**63)},
                                   {"whole": str(-2**63 - 1)}, {"amount": "9" * 5000}, {"amount": str(2**64)},
                                   {"meta": '{"n": ' + "9" * 4000 + "}"}, {"items": f"[1, [{2**63}]]"}])
def test_an_integer_beyond_64_bits_is_refused_with_its_bounds(given):
    with pytest.raises(ArgumentsInvalid, match=f"argument '{next(iter(given))}' {BEYOND}: whole numbers go from "
                                               f"{-2**63} to {2**63 - 1}"):
        resolve_args(kinds(), given, from_text=True)


def test_the_64_bit_bounds_themselves_pass():
    assert resolve_args(kinds(), {"whole": str(2**63 - 1), "amount": str(-2**63)}, from_text=True) == {
        "whole": 2**63 - 1, "amount": -2**63}


@pytest.mark.parametrize("given", [{"text": "a\x00b"}, {"meta": '{"k": "a\\u0000b"}'}, {"meta": '{"k\\u0000": 1}'},
                                   {"items": '["ok", ["\\ud800"]]'}, {"text": "bad \ud800 text"}])
def test_a_nul_or_an_unpaired_surrogate_is_refused_at_any_depth(given):
    with pytest.raises(ArgumentsInvalid, match="holds a NUL character or an unpaired surrogate, which cannot be"):
        resolve_args(kinds(), given, from_text=True)


@pytest.mark.parametrize("value", ["²", "٣", "nan", "1e999"])
def test_a_number_in_other_digits_or_none_at_all_is_refused(value):
    with pytest.raises(ArgumentsInvalid, match="argument 'whole'"):
        resolve_args(kinds(), {"whole": value}, from_text=True)


def test_text_with_tabs_line_breaks_and_any_digits_passes():
    assert resolve_args(kinds(), {"text": "a\tb\r\n²٣ 1e999"}, from_text=True) == {"text": "a\tb\r\n²٣ 1e999"}
