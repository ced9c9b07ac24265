"""Run arguments: checked against the document's `args` and coerced to their declared types."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from engine.executors.gateway_result import storable
from engine.model import Document, OutputSchema
from engine.outputs import coerce, validate_outputs

# A run's arguments are stored, and passed on to steps, as JSON, which other programs read in 64 bits.
MIN_INTEGER, MAX_INTEGER = -2**63, 2**63 - 1
_WHOLE = re.compile(r"\s*[-+]?[0-9]+\s*")


class ArgumentsInvalid(ValueError):
    """Arguments that do not fit the document; `problems` lists every one."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def resolve_args(document: Document, given: Mapping[str, Any], *, from_text: bool = False) -> dict[str, Any]:
    """The run's arguments: given values coerced, defaults filled in.

    Args:
        document: the workflow document (its `args` declarations).
        given: argument values by name.
        from_text: values are command-line text (`--arg k=v`); objects and
            lists are then read as JSON.

    Raises:
        ArgumentsInvalid: an undeclared argument, a missing required one, or
            a value that does not fit its type.
    """
    declared = document.args
    problems = []
    for name in given:
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            problems.append(f"argument {name!r} is not declared under `args` (declared: {known})")
    result: dict[str, Any] = {}
    for name, spec in declared.items():
        if name in given:
            value = given[name]
            if from_text and isinstance(value, str) and spec.type in ("object", "array"):
                try:
                    value = json.loads(value)
                except ValueError:
                    problems.append(f"argument {name!r} must be JSON ({spec.type})")
                    continue
                except RecursionError:
                    problems.append(f"argument {name!r} nests too deeply to be read as JSON")
                    continue
            value = coerce(value, spec.type)
            if not _finite(value):
                problems.append(f"argument {name!r} holds a number that is not finite (NaN or Infinity), "
                                f"which JSON cannot carry")
                continue
            if problem := _unkeepable(name, value, spec.type):
                problems.append(problem)
                continue
            problem = validate_outputs({name: value}, {name: OutputSchema(type=spec.type)})
            if problem:
                problems.append(problem.replace("output", "argument", 1))
                continue
            result[name] = value
        elif spec.default is not None:
            result[name] = spec.default
        elif spec.required:
            problems.append(f"argument {name!r} is required")
    if problems:
        raise ArgumentsInvalid(problems)
    return result


def _finite(value: Any) -> bool:
    """Whether `value` is JSON as the spec knows it: a run's arguments are stored and passed on as JSON."""
    try:
        json.dumps(value, allow_nan=False, default=str)
    except ValueError:
        return False
    except RecursionError:
        return True  # too deep to write; check_args_size and the size limits say so
    return True


def _unkeepable(name: str, value: Any, type_name: str) -> str | None:
    """What no database keeps: an integer beyond 64 bits (one too long for int() stays text), a NUL character
    or an unpaired surrogate, at any depth."""
    beyond = (f"argument {name!r} holds an integer beyond 64 bits: whole numbers go from {MIN_INTEGER} "
              f"to {MAX_INTEGER}")
    if type(value) is str and type_name in ("integer", "number") and _WHOLE.fullmatch(value):
        return beyond
    stack = [value]
    while stack:  # no recursion: JSON may nest as deep as the parser allowed
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif type(item) is int and not MIN_INTEGER <= item <= MAX_INTEGER:
            return beyond
        elif type(item) is str and not storable(item):
            return f"argument {name!r} holds a NUL character or an unpaired surrogate, which cannot be stored"
    return None
