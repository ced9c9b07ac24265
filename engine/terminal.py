"""What the command lines share: exit codes, KEY=VALUE arguments, and how problems and runs are printed.

The local runner's CLI (`python -m engine`) and the cluster's (`forge`) print the same lines and exit the
same way; this module holds that without the local runner.
"""

from __future__ import annotations

from engine.interpreter.loops import reply_problem
from engine.interpreter.state import StepStatus
from engine.interpreter.triggers import UPSTREAM_FAILED
from engine.validation import Report

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_PAUSED = 0, 1, 2, 3


def run_exit(status: str) -> int:
    """How a run command exits on the run's status: 0 completed, 3 paused (waiting for a person's decision or reply),
    1 failed or cancelled."""
    return {"completed": EXIT_OK, "paused": EXIT_PAUSED}.get(status, EXIT_FAILED)


class UsageError(Exception):
    """A bad command-line argument (exit 2)."""


def pairs(items: list[str], flag: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
        pairs[key] = value
    return pairs


def replies(items: list[str], flag: str = "--reply") -> dict[str, list[str]]:
    """`STEP=TEXT` answers to reply gates, in the order given for each step (spec section 9)."""
    found: dict[str, list[str]] = {}
    for item in items:
        step, sep, text = item.partition("=")
        if not sep or not step:
            raise UsageError(f"{flag} {item!r}: expected STEP=TEXT")
        problem = reply_problem(text)
        if problem:
            raise UsageError(f"{flag} {step}=...: {problem}")
        found.setdefault(step, []).append(text)
    return found


def unasked_replies(workflow, answers: dict[str, list[str]]) -> list[str]:
    """The steps of `--reply` answers that no reply gate of `workflow` asks for (ignored, as spec 9 says)."""
    def asks(step: str) -> bool:
        loop = workflow.by_id[step].model.loop if step in workflow.by_id else None
        return loop is not None and loop.gate == "reply"

    return [step for step in answers if not asks(step)]


def unasked_note(step: str) -> str:
    return f"note: --reply {step}=... is ignored: the workflow has no step {step!r} with a reply gate"


def print_problems(path: str, report_: Report, write=print) -> None:
    """One line per problem and warning, as `FILE:LINE:COLUMN: error CODE [STEP]: message`."""
    for kind, items in (("error", report_.problems), ("warning", report_.warnings)):
        for p in items:
            where = f"{path}:{p.line}:{p.column}" if p.line else path
            step = f" [{p.step}]" if p.step else ""
            write(f"{where}: {kind} {p.code}{step}: {p.message}")


def print_validation(path: str, report_: Report, write=print) -> None:
    """What `validate` prints: every problem and warning, then `FILE: valid (N steps)` when there is no problem."""
    print_problems(path, report_, write)
    if report_.valid:
        write(f"{path}: valid ({len(report_.workflow.steps)} steps)")


def never_ran(status: str, error_code: str | None) -> bool:
    """A step failed because something upstream failed: it never started (its status stays `failed`)."""
    return status == StepStatus.FAILED and error_code == UPSTREAM_FAILED


def status_word(status: str, error_code: str | None) -> str:
    """A step's status as a person reads it (the CLIs' tables and the console): the engine's word, except for a
    step that never ran."""
    return "not run: upstream failed" if never_ran(status, error_code) else status


def print_run(result: dict, write=print, name: str = "run") -> None:
    """One line per step, then the run's status (the run JSON of spec section 12, for people)."""
    width = max((len(s) for s in result["steps"]), default=4)
    for step_id, step in result["steps"].items():
        extra = f"  {step['error_code']}: {step['error']}" if step["error"] and not never_ran(
            step["status"], step["error_code"]) else ""
        write(f"{step_id:<{width}}  {status_word(step['status'], step['error_code']):<10} "
              f"attempts={step['attempts']}{extra}")
    write(f"{name} {result['status']}" + (f": {result['error']}" if result["error"] else ""))
