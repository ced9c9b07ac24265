"""A run held before its first step until a person approves its start (spec 15: a schedule that requires
approval; seed 004's dispatch with an approval gate).

A mixin of Interpreter, like FailureHandling. `RunStarted(hold=...)` asks for the decision as an approval
record of kind `start` whose step is START (no step: the whole run waits); while it is pending the run
decides and dispatches nothing. The record is the whole of the hold's state, so a checkpoint taken while
held restores held. Approve: the run goes on to its first steps. Reject: every step ends cancelled and the
run `cancelled` with `start_rejected`. A run that ends otherwise while held (cancelled, aborted, its
deadline) expires the request.
"""

from __future__ import annotations

from typing import Any

from engine.interpreter import commands as cmd
from engine.interpreter import events as ev
from engine.interpreter.state import RunStatus, StepStatus

START = ""  # the step a start hold's record and decision name: none, the run itself
START_KIND = "start"
START_REJECTED = "start_rejected"
START_OPTIONS = ("approve", "reject")


def hold_fields(hold: Any) -> tuple[str, tuple[str, ...]]:
    """The hold's message and approver groups; EventRejected for a hold that is not the documented shape."""
    if not isinstance(hold, dict):
        raise ev.EventRejected("a start hold is an object with a message and approvers")
    message, approvers = hold.get("message", ""), hold.get("approvers", [])
    if not isinstance(message, str) or not isinstance(approvers, (list, tuple)) \
            or not all(isinstance(group, str) and group for group in approvers):
        raise ev.EventRejected("a start hold's message is text and its approvers a list of group names")
    return message, tuple(approvers)


class StartHold:
    """The start hold's part of the interpreter (it reads and writes the Interpreter's fields)."""

    def _hold_start(self, hold: Any) -> None:
        message, approvers = hold_fields(hold)
        state = self.state
        state.seq += 1
        approval_id = f"a{state.seq}"
        state.approvals.append({
            "id": approval_id, "step": START, "kind": START_KIND, "status": "pending", "decision": None,
            "options": list(START_OPTIONS), "message": message, "approvers": list(approvers), "attempt": 0,
            "requested_at": state.now, "decided_at": None, "by": None, "by_id": None, "comment": None})
        self._out.append(cmd.RequestApproval(approval_id, START, START_KIND, START_OPTIONS, message, approvers))

    def _start_held(self) -> dict[str, Any] | None:
        """The pending start request, if the run is held (it is always the run's first request)."""
        approvals = self.state.approvals
        if approvals and approvals[0]["kind"] == START_KIND and approvals[0]["status"] == "pending":
            return approvals[0]
        return None

    def _decide_start(self, event: ev.ApprovalDecided) -> None:
        record = self._start_held()
        if record is None:
            raise ev.EventRejected("the run is not held before its start: there is no start to decide")
        if event.decision not in START_OPTIONS:
            raise ev.EventRejected(f"{event.decision!r} does not answer a start hold; choose approve or reject")
        approved = event.decision == "approve"
        record.update(status="approved" if approved else "rejected", decision=event.decision,
                      decided_at=self.state.now, by=event.by, by_id=event.by_id, comment=event.comment)
        if approved:
            return  # the pump that follows decides the first steps
        message = f"its start was rejected by {event.by}" if event.by else "its start was rejected"
        for i, st in enumerate(self._st):
            if st.status not in StepStatus.TERMINAL:
                self._set(i, StepStatus.CANCELLED, None, error=f"the run never started: {message}",
                          code=START_REJECTED)
        self._finish(RunStatus.CANCELLED, f"the run never started: {message}", START_REJECTED)

    def _expire_start(self) -> None:
        record = self._start_held()
        if record is not None:
            record["status"] = "expired"
