"""Loop steps (spec section 9): iterate loops with `until` and reply gates, and reviewer/fix cycles.

A mixin of Interpreter, like FailureHandling: what happens between one call of a loop step and the next. Each
call is an entry of the step's `history`, appended when it is dispatched and completed when it returns; the
loop's values in templates (`${loop.…}`) are computed from the entries of the current pass.
"""

from __future__ import annotations

import heapq
import re
from typing import Any

from engine.expressions import EvaluationError
from engine.interpreter import events as ev
from engine.interpreter import steps
from engine.interpreter.state import StepState, StepStatus, Wait
from engine.outputs import coerce_outputs

# The seed's verdict marker, exactly, matched line by line: the first line of a review that matches decides.
VERDICT = re.compile(r"\s*VERDICT:\s*(APPROVED|REQUEST_CHANGES)\b")
REPLY_OPTIONS = ("reply",)


def verdict_of(stdout: str) -> str | None:
    for line in (stdout or "").split("\n"):
        match = VERDICT.match(line)
        if match:
            return match.group(1)
    return None


def reply_problem(text: Any) -> str | None:
    """Why a reply cannot be taken, or None."""
    if not isinstance(text, str) or not text.strip():
        return "a reply needs some text"
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: bytes that were not UTF-8 (a shell argument, say)
        return "a reply must be UTF-8 text"
    if size > ev.MAX_REPLY_BYTES:
        return f"a reply is at most {ev.MAX_REPLY_BYTES:,} bytes; this one has {size:,}"
    if "\0" in text:
        return "a reply cannot hold a NUL character"
    return None


def current_pass(st: StepState) -> list[dict[str, Any]]:
    return st.history[st.loop_from:]


def returned(entry: dict[str, Any]) -> bool:
    """A call that counts for the loop: it returned, without an error, and a review with its verdict.

    A failed call is kept in the history for people to see, and its retry is the same call again.
    (An entry without `finished_at` comes from a checkpoint older than these fields: it had returned.)
    """
    if entry.get("finished_at", 0) is None or "error" in entry:
        return False
    return entry.get("kind") != "review" or entry.get("verdict") is not None


def returned_calls(st: StepState) -> list[dict[str, Any]]:
    return [h for h in current_pass(st) if returned(h)]


def loop_values(st: StepState, kind: str = "iteration") -> dict[str, Any]:
    """What `${loop.…}` reads in the templates of the step's next call, of kind `kind`."""
    calls = returned_calls(st)
    iterations = [h for h in calls if h.get("kind", "iteration") == "iteration"]
    reviews = [h for h in calls if h.get("kind") == "review"]
    fixes = [h for h in calls if h.get("kind") == "fix"]
    replies = [h["reply"] for h in iterations if "reply" in h]
    return {
        "iteration": st.iteration,
        "previous_output": iterations[-1]["stdout"] if iterations else "",
        "reply": replies[-1] if replies else "", "replies": replies,
        "cycle": len(fixes) + (kind == "fix"), "review": reviews[-1]["stdout"] if reviews else "",
        "fix": fixes[-1]["stdout"] if fixes else "",
    }


class LoopHandling:
    # -- the next call -------------------------------------------------------------

    def _loop_call(self, i: int) -> tuple[str, str, Any, str]:
        """(kind, name, template, agent) of the loop step's next call."""
        spec, st = self._specs[i], self._st[i]
        step_id, loop, agent = self._ids[i], spec.model.loop, spec.model.agent or ""
        if not loop.review:
            return "iteration", f"{step_id}_iter_{st.iteration}", spec.command, agent
        done = returned_calls(st)
        last = done[-1] if done else None
        reviews = sum(1 for h in done if h["kind"] == "review")
        if last is not None and last["kind"] == "review" and last.get("verdict") == "REQUEST_CHANGES":
            cycle = sum(1 for h in done if h["kind"] == "fix") + 1
            fix = loop.on_request_changes
            return "fix", f"{step_id}_fix_{cycle}", spec.fix_command, fix.fix_agent or agent
        name = step_id if reviews == 0 else f"{step_id}_{reviews + 1}"
        template = spec.command if reviews == 0 or spec.re_review_command is None else spec.re_review_command
        return "review", name, template, agent

    def _loop_scope(self, i: int, kind: str = "iteration"):
        return self._scope.with_local({"loop": loop_values(self._st[i], kind)})

    def _begin_call(self, i: int, kind: str, name: str, agent: str, command: str, env: dict) -> None:
        st = self._st[i]
        if st.iteration == 1:
            st.loop_from = len(st.history)  # a new pass of the loop (the first, or a retry that starts over)
        entry = {"name": name, "kind": kind, "iteration": st.iteration, "attempt": st.attempt, "agent": agent,
                 "command": command, "started_at": self.state.now, "finished_at": None, "stdout": None,
                 "outputs": None, "tokens": 0, "cost": 0.0}
        if env:
            entry["env"] = dict(env)
        if kind != "iteration":
            entry["cycle"] = sum(1 for h in returned_calls(st) if h["kind"] == "fix") + (kind == "fix")
        st.history.append(entry)

    def _end_call(self, i: int, event: ev.StepFinished) -> dict[str, Any] | None:
        """Complete the history entry of the call that returned; None when the step is no loop step."""
        st = self._st[i]
        if self._specs[i].model.loop is None:
            return None
        if not st.history or st.history[-1].get("finished_at", 0) is not None:
            # dispatched before history entries were written at dispatch (an older checkpoint)
            st.history.append({"name": f"{self._ids[i]}_iter_{st.iteration}", "kind": "iteration",
                               "iteration": st.iteration, "attempt": st.attempt, "started_at": None})
        entry = st.history[-1]
        entry.update(finished_at=self.state.now, stdout=event.stdout, tokens=event.tokens, cost=event.cost)
        if not event.ok:
            entry["error"] = event.error or "the agent failed"
        return entry

    def _drop_call(self, i: int) -> None:
        """Governance stopped the dispatch before the agent was called: there was no call to keep."""
        st = self._st[i]
        if self._specs[i].model.loop is not None and st.history and st.history[-1].get("finished_at", 0) is None:
            st.history.pop()

    def _close_call(self, i: int, error: str) -> None:
        """The call in flight ends without a result (timed out, cancelled): its entry says so."""
        st = self._st[i]
        if self._specs[i].model.loop is not None and st.history and st.history[-1].get("finished_at", 0) is None:
            st.history[-1].update(finished_at=self.state.now, error=error)

    # -- after a call returned ---------------------------------------------------------

    def _loop_call_done(self, i: int, entry: dict[str, Any], outputs: dict) -> None:
        spec = self._specs[i]
        entry["outputs"] = coerce_outputs(outputs, spec.model.outputs)
        if spec.model.loop.review:
            self._review_done(i, entry, outputs)
        else:
            self._iteration_done(i, entry, outputs)

    def _iteration_done(self, i: int, entry: dict[str, Any], outputs: dict) -> None:
        spec, st = self._specs[i], self._st[i]
        loop = spec.model.loop
        earlier = [h for h in returned_calls(st)[:-1] if h.get("kind", "iteration") == "iteration"]
        local = {"output": entry["stdout"], "outputs": entry["outputs"], "iteration": st.iteration,
                 "previous_output": earlier[-1]["stdout"] if earlier else None, "loop": loop_values(st)}
        if spec.until is None:
            done = st.iteration >= loop.max_iterations
        else:
            try:
                done = bool(spec.until.evaluate(self._scope.with_local(local)))
            except EvaluationError as exc:
                self._fail(i, "condition_error", f"loop.until could not be evaluated: {exc}", False)
                return
        if done:
            self._complete_with(i, outputs)
        elif st.iteration >= loop.max_iterations:
            self._fail(i, "loop_exhausted", f"loop.until did not hold after {loop.max_iterations} iterations",
                       False)
        elif loop.gate == "reply":
            self._ask_for_reply(i)
        else:
            st.iteration += 1  # still in flight: it keeps its slot and dispatches at once
            self._dispatch(i)

    def _review_done(self, i: int, entry: dict[str, Any], outputs: dict) -> None:
        st, loop = self._st[i], self._specs[i].model.loop
        if entry["kind"] == "fix":
            st.iteration += 1
            self._dispatch(i)
            return
        verdict = entry["verdict"] = verdict_of(entry["stdout"])
        if verdict is None:
            self._fail(i, "verdict_missing", f"the review {entry['name']!r} has no line `VERDICT: APPROVED` or "
                       "`VERDICT: REQUEST_CHANGES`", False)
        elif verdict == "APPROVED":
            self._complete_with(i, outputs)
        elif entry.get("cycle", 0) >= loop.max_cycles:
            self._fail(i, "loop_exhausted", f"the review still requests changes after {loop.max_cycles} fix "
                       f"cycle{'s' if loop.max_cycles != 1 else ''}", False)
        else:
            st.iteration += 1
            self._dispatch(i)

    # -- reply gates ---------------------------------------------------------------

    def _ask_for_reply(self, i: int) -> None:
        spec, st = self._specs[i], self._st[i]
        loop = spec.model.loop
        try:
            message = steps.approval_message(spec, self._loop_scope(i))
        except steps.StepFailure as exc:  # the message cannot be written: the step cannot go on
            self._fail(i, exc.code, str(exc), False)
            return
        if not message:
            message = f"Iteration {st.iteration} of at most {loop.max_iterations} is done: reply to go on."
        self._set(i, StepStatus.WAITING, Wait.REPLY)
        self._request(i, "reply", REPLY_OPTIONS, message, tuple(spec.model.approvers or ()))
        self.state.approvals[-1].update(iteration=st.iteration, length=None)
        if spec.model.timeout is not None:
            self._timer(i, spec.model.timeout_s, "approval_timeout")

    def _on_reply_given(self, event: ev.ReplyGiven) -> None:
        i, record = self._pending_request(event.step)
        if record is None or record["kind"] != "reply":
            raise ev.EventRejected(f"step {event.step!r} is not waiting for a reply")
        problem = reply_problem(event.text)
        if problem:
            raise ev.EventRejected(problem)
        st = self._st[i]
        record.update(status="answered", decided_at=self.state.now, by=event.by, by_id=event.by_id,
                      length=len(event.text.encode("utf-8")))
        entry = st.history[-1]
        entry.update(reply=event.text, reply_by=event.by, reply_at=self.state.now, reply_id=record["id"])
        st.iteration += 1
        self._set(i, StepStatus.PENDING, Wait.REDISPATCH)
        heapq.heappush(self._ready, (self._ids[i], i))
