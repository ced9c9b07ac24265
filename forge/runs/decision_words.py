"""What a person reads about a decision on an approval, a governance hold or an escalation: the one writer of
"Retry chosen by april", "Rejected by ...", "Expired ...", for every page and message that describes one."""

from __future__ import annotations

from datetime import datetime

# The decision as an outcome, and as what the person who chose it did (a flash speaks to them).
OUTCOMES = {"approve": "Approved", "reject": "Rejected", "retry": "Retry chosen", "skip": "Skipped",
            "abort": "Aborted"}
YOU_DID = {"approve": "You approved", "reject": "You rejected", "retry": "You chose to retry",
           "skip": "You skipped", "abort": "You aborted"}
EXPIRED, PENDING = "expired", "pending"


def decided_words(status: str, decision: str | None, by: str | None = None,
                  decided_at: datetime | None = None) -> str:
    """One decided (or undecided) approval in words: "Retry chosen by april at 2026-11-25 10:00:00 UTC".

    `by`: the person's name, None when no person decided (the system) or the person was deleted."""
    at = f" at {decided_at:%Y-%m-%d %H:%M:%S} UTC" if decided_at else ""
    if status == PENDING:
        return "Waiting for a decision"
    if status == EXPIRED:
        return f"Expired{at}: no decision came in time"
    outcome = OUTCOMES.get(decision or "", status.capitalize())
    return f"{outcome}{f' by {by}' if by else ''}{at}"


def approval_words(approval) -> str:
    """`decided_words` of an Approval row."""
    by = approval.decided_by.get_username() if approval.decided_by_id else None
    return decided_words(approval.status, approval.decision, by, approval.decided_at)


def flash_words(decision: str, approval) -> str:
    """What the person who chose `decision` reads next, from the row as the service returned it."""
    where = f"{approval.step or 'the start'} in run {approval.run_id}"  # a held start names no step
    if approval.status == EXPIRED:
        return f"Too late: {where} timed out before your decision, so nothing was decided."
    done = f"{YOU_DID.get(decision, f'You chose {decision} for')} {where}."
    if approval.status == PENDING:
        return f"{done} The run is recording it."
    return done
