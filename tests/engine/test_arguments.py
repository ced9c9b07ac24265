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
