"""The `python` agent: a step's command names a Python callable from an allow-list, which is called in-process.

Only callables the operator listed can run, so a workflow author cannot
reach arbitrary code by naming it.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.executors.base import StepRequest, StepResult

_LISTED_NAMES = 10
_MESSAGE_CHARS = 500


@dataclass(frozen=True, slots=True)
class PythonCall:
    """The one argument a callable gets: which call this is, its inputs and stdin, and the cancel to honour."""

    run_id: str
    step: str
    attempt: int
    iteration: int
    inputs: dict[str, Any]
    stdin: str | None
    cancel: threading.Event = field(repr=False)


class PythonExecutor:
    """Calls the allowed callable the step's command names, in the calling thread.

    The step's timeout is not enforced here: a callable cannot be stopped from
    outside, so the caller runs python steps where it can abandon them, and a
    long-running callable should poll `PythonCall.cancel`.

    The callable may return a dict (the outputs; stdout is their JSON), a str
    (the stdout; no outputs), None (no outputs, empty stdout) or a StepResult
    (used as is). An exception fails the step with its type and message.

    Args:
        allowed: the callables a step may name, by name (see `load_callables`).
    """

    def __init__(self, allowed: Mapping[str, Callable[[PythonCall], Any]]):
        self.allowed = dict(allowed)

    def execute(self, request: StepRequest, cancel: threading.Event) -> StepResult:
        """Call the named callable with a `PythonCall` and turn what it returns into a result."""
        name = request.command.strip()
        function = self.allowed.get(name)
        if function is None:
            return StepResult.failure(f"python callable {name!r} is not allowed; allowed: {self._listed()}")
        if cancel.is_set():
            return StepResult.failure("cancelled", "cancelled")
        call = PythonCall(run_id=request.run_id, step=request.step, attempt=request.attempt,
                          iteration=request.iteration, inputs=dict(request.inputs), stdin=request.stdin,
                          cancel=cancel)
        try:
            value = function(call)
        except Exception as exc:  # the callable's failure is the step's, not the runner's
            message = str(exc)[:_MESSAGE_CHARS]
            return StepResult.failure(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)
        return _result(name, value)

    def _listed(self) -> str:
        names = sorted(self.allowed)
        if not names:
            return "none"
        listed = ", ".join(names[:_LISTED_NAMES])
        return listed + (f" and {len(names) - _LISTED_NAMES} more" if len(names) > _LISTED_NAMES else "")


def _result(name: str, value: Any) -> StepResult:
    if isinstance(value, StepResult):
        return value
    if value is None:
        return StepResult(ok=True, outputs={}, stdout="")
    if isinstance(value, str):
        return StepResult(ok=True, outputs={}, stdout=value)
    if isinstance(value, dict):
        if bad := [key for key in value if not isinstance(key, str)]:
            return StepResult.failure(f"python callable {name!r} returned outputs with a non-string key "
                                      f"{bad[0]!r}")
        try:
            stdout = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            return StepResult.failure(f"python callable {name!r} returned outputs that are not JSON: {exc}")
        return StepResult(ok=True, outputs=value, stdout=stdout)
    return StepResult.failure(f"python callable {name!r} returned {type(value).__name__}; "
                              "expected a dict, a str, None or a StepResult")


def load_callables(names: Iterable[str]) -> dict[str, Callable[[PythonCall], Any]]:
    """Import callables by dotted path, for `PythonExecutor`'s allow-list.

    Args:
        names: paths such as "package.module.function".

    Returns:
        Each path mapped to the callable it names; a step's command is the path.

    Raises:
        ValueError: a path without a module part, a module that cannot be
            imported, a missing attribute, or an attribute that is not callable.
    """
    loaded = {}
    for name in names:
        module_name, _, attribute = name.rpartition(".") if isinstance(name, str) else ("", "", "")
        if not module_name or not attribute or "" in module_name.split("."):
            raise ValueError(f"{name!r} is not a dotted path such as 'package.module.function'")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # importing runs the module's code, which may fail in any way
            raise ValueError(f"cannot import module {module_name!r} for {name!r}: "
                             f"{type(exc).__name__}: {exc}") from exc
        try:
            function = getattr(module, attribute)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no attribute {attribute!r}") from None
        if not callable(function):
            raise ValueError(f"{name!r} is a {type(function).__name__}, not a callable")
        loaded[name] = function
    return loaded
