"""Run arguments: checked against the document's `args` and coerced to their declared types."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.model import Document
from engine.outputs import coerce, validate_outputs
from engine.model import OutputSchema


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
