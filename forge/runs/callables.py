"""Python callables shipped with Forge, allowed by default (FORGE_PYTHON_CALLABLES)."""

from __future__ import annotations

from engine.executors.python_call import PythonCall


def noop(call: PythonCall) -> dict:
    """Does nothing; what the benchmark measures the runtime's own cost with."""
    return {}


def echo(call: PythonCall) -> dict:
    """Returns its inputs as outputs."""
    return dict(call.inputs)


def word_count(call: PythonCall) -> dict:
    """Counts the words of stdin, or of the `text` input."""
    text = call.stdin if call.stdin is not None else str(call.inputs.get("text", ""))
    return {"words": len(text.split())}
