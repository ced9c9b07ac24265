"""The keys of a run's inbox (RunInput.key): one per event a producer may deliver more than once.

A key is unique per run, so a repeated delivery (a redelivered task, a
second click, a retried callback) finds its input already there and is
acknowledged instead of fed twice.
"""

from __future__ import annotations

START = "start"      # the run's RunStarted
CANCEL = "cancel"    # a person's CancelRequested (one per run)
ABORT = "abort"      # the runtime's RunAborted (one per run)
_TIMER = "timer:"


def completion(step: str, attempt: int, iteration: int) -> str:
    """One result per step attempt (and loop iteration)."""
    return f"done:{step}:{attempt}:{iteration}"


def timer(timer_id: str) -> str:
    return _TIMER + timer_id


def timer_of(key: str) -> str | None:
    """The timer id of a timer's key, None for any other key."""
    return key[len(_TIMER):] if key.startswith(_TIMER) else None


def decision(approval_key: str) -> str:
    """One decision per approval: the first one recorded is the one fed."""
    return f"decision:{approval_key}"


def reply(approval_key: str) -> str:
    """One answer per reply request: the first one recorded is the one fed."""
    return f"reply:{approval_key}"


def child(step: str, attempt: int | None) -> str:
    """A child run's end, reported to its parent's step."""
    return f"child:{step}:{attempt}"
