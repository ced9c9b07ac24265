"""Every refusal a person can be told, as one family, and the one table that says how each client shows it: the
API as an RFC 9457 problem (its `type` and HTTP status), the CLI as an exit code. Views, the API and the CLI read
`problem_of` and `exit_code_of`; none keeps a mapping of its own (docs/design/api.md, section 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied

from engine.terminal import EXIT_INVALID

EXIT_REFUSED = 4  # not signed in, not allowed, or the token lacks the scope
EXIT_UNAVAILABLE = 5  # the server is unreachable, busy or limiting this client
PROBLEM_BASE = "https://forge.invalid/problems/"


class ForgeError(Exception):
    """A refusal in words a person reads: `message`; `code`, a finer machine-readable reason (`too_many_drafts`);
    `extra`, fields the API adds to the problem's body."""

    def __init__(self, message: str, *, code: str = "", **extra: Any):
        super().__init__(message)
        self.message = message
        self.code = code
        self.extra = extra


class BadRequest(ForgeError):
    """The request itself is malformed: a body that is no JSON, an unknown field, a bad cursor or filter."""


class Invalid(ForgeError):
    """Well-formed, but the values cannot be taken: a workflow that does not validate, a bad cron."""


class NotFound(ForgeError):
    """No such object, or none the person may see."""


class Unauthenticated(ForgeError):
    """No credentials, or a token that is unknown, expired or revoked."""


class Forbidden(ForgeError, PermissionDenied):
    """The person's groups do not allow it. Also Django's PermissionDenied, so a console page refusing with it
    answers Django's 403 page (forge/urls.py handler403) and the admin's checks see it as theirs."""


class ScopeMissing(Forbidden):
    """The person may, but the token they came with lacks the scope."""


class Conflict(ForgeError):
    """The object's state does not allow it now: a run already ended, a key still in flight."""


class Stale(Conflict):
    """The request was made against an older state: a draft's revision, a restart plan's fingerprint."""


class TooLarge(ForgeError):
    """A body, a text or a list past its bound."""


class RateLimited(ForgeError):
    """Too many requests: `retry_after` seconds until the next is taken."""


class Unavailable(ForgeError):
    """The server cannot answer now (stopping, or its database is busy)."""


@dataclass(frozen=True)
class Problem:
    slug: str
    status: int
    title: str
    exit_code: int

    @property
    def type(self) -> str:
        return PROBLEM_BASE + self.slug


PROBLEMS: dict[type[ForgeError], Problem] = {
    BadRequest: Problem("bad-request", 400, "Bad request", EXIT_INVALID),
    Invalid: Problem("invalid", 422, "Invalid", EXIT_INVALID),
    NotFound: Problem("not-found", 404, "Not found", EXIT_INVALID),
    Unauthenticated: Problem("unauthenticated", 401, "Not signed in", EXIT_REFUSED),
    Forbidden: Problem("forbidden", 403, "Not allowed", EXIT_REFUSED),
    ScopeMissing: Problem("scope-missing", 403, "The token lacks a scope", EXIT_REFUSED),
    Conflict: Problem("conflict", 409, "Conflict", EXIT_INVALID),
    Stale: Problem("stale", 409, "Changed meanwhile", EXIT_INVALID),
    TooLarge: Problem("too-large", 413, "Too large", EXIT_INVALID),
    RateLimited: Problem("rate-limited", 429, "Too many requests", EXIT_UNAVAILABLE),
    Unavailable: Problem("unavailable", 503, "Unavailable", EXIT_UNAVAILABLE),
}
GENERIC = Problem("refused", 400, "Refused", EXIT_INVALID)  # a ForgeError subclass of no kind above


def kind_of(exc: ForgeError) -> Problem:
    """The table's row of `exc`: its own class's, else the nearest ancestor's."""
    for cls in type(exc).__mro__:
        if cls in PROBLEMS:
            return PROBLEMS[cls]
    return GENERIC


def problem_of(exc: ForgeError) -> tuple[int, dict[str, Any]]:
    """The HTTP status and RFC 9457 body of `exc`."""
    kind = kind_of(exc)
    body: dict[str, Any] = {"type": kind.type, "title": kind.title, "status": kind.status, "detail": exc.message}
    if exc.code:
        body["code"] = exc.code
    body.update({k: v for k, v in exc.extra.items() if k not in body})
    return kind.status, body


def exit_code_of(exc: ForgeError) -> int:
    return kind_of(exc).exit_code
