"""Loop steps in the state machine (spec section 9): loop paths in templates, reply gates, reviewer/fix cycles."""

import json

import pytest

from engine.interpreter import (
    MAX_REPLY_BYTES, CancelRequested, Dispatch, DispatchBlocked, DispatchHeld, EventRejected, FinishRun, Interpreter,
    ReplyGiven, RequestApproval, ScheduleTimer, StepFinished, Wait, event_from_json,
)

from tests.engine.interpreter.support import Driver, checkpoint, dispatched, of, run_fast

ITERATE = """
name: iterate
variables: {topic: cats}
steps:
  - id: draft
    agent: writer
    command: "Draft ${loop.iteration} on ${vars.topic} after [${loop.previous_output}]"
    loop: {max_iterations: 3, until: "output.contains('DONE')"}
"""

GATED = """
name: gated
args: {who: {type: string, required: false, default: eve}}
steps:
  - id: ask
    agent: writer
    command: "Draft ${loop.iteration}; reply=[${loop.reply}] replies=${loop.replies}"
    approval_message: "Iteration ${loop.iteration} wrote: ${loop.previous_output}"
    approvers: [Editors]
    loop: {max_iterations: 4, until: "output.contains('DONE')", gate: reply}
  - {id: publish, agent: writer, command: publish, depends_on: [ask]}
"""

REVIEW = """
name: review
steps:
  - id: review
    agent: reviewer
    command: "Review (cycle ${loop.cycle}, review [${loop.review}], fix [${loop.fix}])"
    loop:
      max_cycles: 2
      on_request_changes:
        fix_command: "Fix cycle ${loop.cycle}: ${loop.review}"
        fix_agent: executor
        re_review_command: "Again (cycle ${loop.cycle}) after ${loop.fix}"
"""

RC = "VERDICT: REQUEST_CHANGES"
OK = "VERDICT: APPROVED"


def replaced(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


def started(text: str, **options) -> Driver:
    driver = Driver(text, **options)
    driver.start()
    return driver


def last_dispatch(commands: list) -> Dispatch:
    found = of(commands, Dispatch)
    assert len(found) == 1, commands
    return found[0]


def waiting_for_reply(text: str = GATED, stdout: str = "draft one") -> Driver:
    driver = started(text)
    driver.ok("ask", stdout=stdout)
    return driver


# -- iterate loops: ${loop.…} in the command, history -------------------------------------------------------

def test_each_iteration_is_dispatched_with_its_number_and_the_previous_output():
    driver = Driver(ITERATE)
    first = last_dispatch(driver.start())
    assert (first.iteration, first.command) == (1, "Draft 1 on cats after []")
    second = last_dispatch(driver.ok("draft", stdout="v1"))
    assert (second.iteration, second.command) == (2, "Draft 2 on cats after [v1]")
    third = last_dispatch(driver.ok("draft", stdout="v2"))
    assert third.command == "Draft 3 on cats after [v2]"
    driver.ok("draft", {"n": 3}, stdout="v3 DONE")
    st = driver.step("draft")
    assert (st.status, st.iteration, st.outputs, st.stdout) == ("completed", 3, {"n": 3}, "v3 DONE")


def test_an_iterate_loop_keeps_one_history_entry_per_returned_call():
    driver = Driver(ITERATE)
    driver.now = 10.0
    driver.start()
    driver.now = 12.0
    driver.ok("draft", {"n": 1}, stdout="v1")
    driver.now = 15.0
    driver.ok("draft", {"n": 2}, stdout="DONE")
    history = driver.step("draft").history
    assert [h["name"] for h in history] == ["draft_iter_1", "draft_iter_2"]
    first = history[0]
    assert (first["kind"], first["iteration"], first["attempt"], first["agent"]) == ("iteration", 1, 1, "writer")
    assert (first["command"], first["stdout"], first["outputs"]) == ("Draft 1 on cats after []", "v1", {"n": 1})
    assert (first["started_at"], first["finished_at"]) == (10.0, 12.0)
    assert (history[1]["started_at"], history[1]["finished_at"]) == (12.0, 15.0)
    assert "verdict" not in first or first["verdict"] is None


def test_the_runner_json_names_the_calls_of_every_loop_step():
    result = run_fast("""
        name: r
        steps:
          - {id: a, agent: mock, command: x, loop: {max_iterations: 2}}
          - {id: b, agent: mock, command: x}
        """)
    assert result["steps"]["a"]["history"] == ["a_iter_1", "a_iter_2"]
    assert result["steps"]["a"]["iterations"] == 2


def test_reply_paths_are_empty_in_a_loop_without_a_gate():
    driver = Driver(replaced(GATED, ", gate: reply", ""))
    assert last_dispatch(driver.start()).command == "Draft 1; reply=[] replies=[]"
    assert last_dispatch(driver.ok("ask", stdout="x")).command == "Draft 2; reply=[] replies=[]"
    assert driver.machine.state.approvals == []


# -- reply gates ---------------------------------------------------------------------------------------------

def test_an_iteration_whose_until_fails_asks_the_approvers_for_a_reply_with_the_rendered_message():
    driver = started(GATED)
    commands = driver.ok("ask", stdout="draft one")
    request = of(commands, RequestApproval)[0]
    assert (request.step, request.kind, request.options) == ("ask", "reply", ("reply",))
    assert (request.message, request.approvers) == ("Iteration 1 wrote: draft one", ("Editors",))
    assert dispatched(commands) == []
    st = driver.step("ask")
    assert (st.status, st.wait) == ("waiting", Wait.REPLY) == ("waiting", "reply")
    record = driver.machine.state.approvals[0]
    assert (record["kind"], record["status"], record["decision"], record["options"]) == (
        "reply", "pending", None, ["reply"])
    assert (record["message"], record["iteration"], record["step"]) == ("Iteration 1 wrote: draft one", 1, "ask")
    assert driver.machine.pending_approvals == [record]


def test_a_reply_request_without_approvers_or_message_names_no_group_and_still_says_something():
    driver = waiting_for_reply(replaced(GATED, "    approval_message: \"Iteration ${loop.iteration} wrote: "
                                                 "${loop.previous_output}\"\n    approvers: [Editors]\n", ""))
    record = driver.machine.state.approvals[0]
    assert record["approvers"] in ([], ())  # the default: Operators and Approvers, decided by the console
    assert record["message"].strip()


def test_a_reply_starts_the_next_iteration_with_the_reply_in_scope():
    driver = waiting_for_reply()
    commands = driver.reply("ask", "shorter, please", by="carol")
    nxt = last_dispatch(commands)
    assert (nxt.iteration, nxt.command) == (2, 'Draft 2; reply=[shorter, please] replies=["shorter, please"]')
    assert driver.status("ask") == "running"
    record = driver.machine.state.approvals[0]
    assert (record["status"], record["decision"], record["by"]) == ("answered", None, "carol")
    assert record["length"] == len("shorter, please")
    entry = driver.step("ask").history[0]
    assert (entry["reply"], entry["reply_by"], entry["reply_id"]) == ("shorter, please", "carol", record["id"])


def test_replies_accumulate_in_order_and_the_step_completes_when_until_holds():
    driver = waiting_for_reply()
    driver.reply("ask", "one")
    driver.ok("ask", stdout="draft two")
    assert of(driver.commands, RequestApproval)[-1].message == "Iteration 2 wrote: draft two"
    third = last_dispatch(driver.reply("ask", "two"))
    assert third.command == 'Draft 3; reply=[two] replies=["one", "two"]'
    commands = driver.ok("ask", {"final": True}, stdout="DONE")
    assert of(commands, RequestApproval) == []
    st = driver.step("ask")
    assert (st.status, st.outputs, st.iteration) == ("completed", {"final": True}, 3)
    assert [h["name"] for h in st.history] == ["ask_iter_1", "ask_iter_2", "ask_iter_3"]
    assert [h.get("reply") for h in st.history] == ["one", "two", None]
    assert [(a["status"], a["iteration"]) for a in driver.machine.state.approvals] == [
        ("answered", 1), ("answered", 2)]
    assert dispatched(commands) == ["publish"]


def test_a_reply_record_says_when_it_was_asked_and_answered():
    driver = started(GATED)
    driver.now = 1005.0
    driver.ok("ask", stdout="draft one")
    driver.now = 1300.0
    driver.reply("ask", "go", by="carol")
    record = driver.machine.state.approvals[0]
    assert (record["requested_at"], record["decided_at"], record["attempt"]) == (1005.0, 1300.0, 1)
    assert driver.step("ask").history[0]["reply_at"] == 1300.0


def test_a_reply_message_that_does_not_resolve_fails_the_step_with_template_error():
    driver = started("""
        name: bad_message
        steps:
          - {id: before, agent: writer, command: x}
          - id: ask
            agent: writer
            command: go
            depends_on: [before]
            approval_message: "Was ${before.outputs.missing} fine?"
            loop: {max_iterations: 3, until: "output == 'x'", gate: reply}
        """)
    driver.ok("before", {"present": 1})
    commands = driver.ok("ask", stdout="no")
    assert of(commands, RequestApproval) == []
    assert (driver.status("ask"), driver.step("ask").error_code) == ("failed", "template_error")


def test_a_reply_is_data_never_rendered_again():
    driver = waiting_for_reply()
    text = "${args.who} {{ run.id }} $${x} ${loop.iteration} ☃ \"q\""
    nxt = last_dispatch(driver.reply("ask", text))
    assert nxt.command == f"Draft 2; reply=[{text}] replies={json.dumps([text], ensure_ascii=False)}"


def test_a_reply_gate_on_a_shell_step_passes_the_reply_as_a_variable():
    driver = waiting_for_reply("""
        name: shell_gate
        steps:
          - id: ask
            agent: shell
            command: printf '%s' "${loop.reply}"
            loop: {max_iterations: 3, until: "output == 'x'", gate: reply}
        """)
    text = "$(touch /tmp/pwned) `id` ' \" ${HOME}"
    nxt = last_dispatch(driver.reply("ask", text))
    assert text not in nxt.command and "$(touch" not in nxt.command
    assert list(nxt.env.values()) == [text]


@pytest.mark.parametrize("text", ["", " ", "\n\t  \r\n"])
def test_an_empty_reply_is_rejected_and_changes_nothing(text):
    driver = waiting_for_reply()
    before = checkpoint(driver.machine)
    with pytest.raises(EventRejected):
        driver.reply("ask", text)
    assert checkpoint(driver.machine) == before


def test_a_reply_of_64_kib_is_taken_and_one_byte_more_is_rejected():
    assert MAX_REPLY_BYTES == 65536
    at_limit = "☃" * 21845 + "a"      # 65,536 bytes in 21,846 characters
    over = "☃" * 21845 + "ab"         # 65,537 bytes in 21,847 characters: bytes count, not characters
    driver = waiting_for_reply()
    before = checkpoint(driver.machine)
    with pytest.raises(EventRejected):
        driver.reply("ask", over)
    assert checkpoint(driver.machine) == before
    driver.reply("ask", at_limit)
    assert driver.step("ask").history[0]["reply"] == at_limit
    assert driver.machine.state.approvals[0]["length"] == 65536


def test_a_decision_on_a_reply_request_is_rejected_and_changes_nothing():
    driver = waiting_for_reply()
    before = checkpoint(driver.machine)
    for decision in ("approve", "reject", "reply"):
        with pytest.raises(EventRejected):
            driver.decide("ask", decision)
    assert checkpoint(driver.machine) == before


def test_a_reply_to_a_step_that_is_not_waiting_for_one_is_rejected():
    driver = started(GATED + "  - {id: gate, approval: required}\n")
    with pytest.raises(EventRejected):
        driver.reply("ask", "too early")            # running its first iteration
    with pytest.raises(EventRejected):
        driver.reply("gate", "not a decision")      # waiting for an approval, not a reply
    with pytest.raises(EventRejected):
        driver.reply("nosuchstep", "hello")
    driver.ok("ask", stdout="draft")
    driver.reply("ask", "once")
    with pytest.raises(EventRejected):
        driver.reply("ask", "twice")                # the request is answered; the next iteration runs


def test_until_holding_on_the_first_iteration_asks_nothing():
    driver = started(GATED)
    commands = driver.ok("ask", stdout="DONE at once")
    assert of(commands, RequestApproval) == [] and driver.machine.state.approvals == []
    assert driver.status("ask") == "completed"


def test_the_last_iteration_asks_nothing_and_fails_loop_exhausted():
    driver = waiting_for_reply(replaced(GATED, "max_iterations: 4", "max_iterations: 2"))
    driver.reply("ask", "try again")
    commands = driver.ok("ask", stdout="still no")
    assert of(commands, RequestApproval) == []
    assert (driver.status("ask"), driver.step("ask").error_code) == ("failed", "loop_exhausted")
    assert len(driver.machine.state.approvals) == 1


def test_a_step_waiting_for_a_reply_gives_up_its_slot():
    text = """
        name: slots
        steps:
          - id: ask
            agent: writer
            command: go
            loop: {max_iterations: 3, until: "output == 'x'", gate: reply}
          - {id: other, agent: writer, command: go}
        """
    driver = started(text, max_concurrency=1)
    assert dispatched(driver.commands) == ["ask"]
    commands = driver.ok("ask", stdout="no")
    assert dispatched(commands) == ["other"]
    assert driver.status("ask") == "waiting"
    assert dispatched(driver.reply("ask", "go on")) == []  # `other` holds the only slot
    assert dispatched(driver.ok("other")) == ["ask"]


TIMED = replaced(GATED, "approvers: [Editors]", "approvers: [Editors]\n    timeout: 90")


def timed_out_waiting() -> tuple[Driver, ScheduleTimer]:
    """Waiting for a reply asked at 1010; the request's expiry is the only timer at 1100."""
    driver = started(TIMED)
    driver.now = 1010.0
    driver.ok("ask", stdout="draft one")
    timers = [t for t in of(driver.commands, ScheduleTimer) if t.step == "ask" and t.fire_at == 1100.0]
    assert len(timers) == 1, driver.commands
    return driver, timers[0]


def test_the_step_timeout_expires_a_reply_request_like_an_approval():
    driver, timer = timed_out_waiting()
    commands = driver.fire(timer)
    st = driver.step("ask")
    assert (st.status, st.error_code) == ("timed_out", "timeout")
    assert driver.machine.state.approvals[0]["status"] == "expired"
    assert driver.step("publish").error_code == "upstream_failed"
    assert of(commands, FinishRun)[0].status == "failed"
    with pytest.raises(EventRejected):
        driver.reply("ask", "too late")


def test_a_reply_before_the_timeout_leaves_the_old_timer_harmless():
    driver, timer = timed_out_waiting()
    driver.reply("ask", "go on")
    driver.ok("ask", stdout="DONE")
    driver.fire(timer)
    assert driver.status("ask") == "completed"
    assert driver.machine.state.approvals[0]["status"] == "answered"


def test_without_a_step_timeout_a_reply_request_waits_without_a_timer():
    driver = started(GATED)
    driver.now = 1010.0
    commands = driver.ok("ask", stdout="draft one")
    assert of(commands, ScheduleTimer) == []


def test_a_reply_gate_survives_a_checkpoint():
    driver = waiting_for_reply()
    restored = Interpreter.restore(driver.workflow, checkpoint(driver.machine))
    commands = restored.advance(ReplyGiven("ask", "after restart", by="dan", at=driver.now))
    assert last_dispatch(commands).command == 'Draft 2; reply=[after restart] replies=["after restart"]'


def test_a_reply_after_the_run_was_cancelled_is_rejected():
    driver = waiting_for_reply()
    driver.feed(CancelRequested(at=driver.now))
    assert driver.machine.state.status == "cancelled"
    assert driver.machine.pending_approvals == []
    with pytest.raises(EventRejected):
        driver.reply("ask", "anyone?")


# -- reviewer/fix cycles --------------------------------------------------------------------------------------

def test_a_review_approved_at_once_completes_with_that_review_in_one_call():
    driver = Driver(REVIEW)
    first = last_dispatch(driver.start())
    assert (first.agent, first.command, first.call, first.iteration) == (
        "reviewer", "Review (cycle 0, review [], fix [])", 1, 1)
    driver.ok("review", {"score": 9}, stdout=f"fine\n{OK}")
    st = driver.step("review")
    assert (st.status, st.outputs, st.iteration) == ("completed", {"score": 9}, 1)
    assert [(h["name"], h["kind"], h["verdict"], h["cycle"]) for h in st.history] == [
        ("review", "review", "APPROVED", 0)]


def test_request_changes_runs_the_fix_with_the_fix_agent_then_the_re_review():
    driver = started(REVIEW)
    fix = last_dispatch(driver.ok("review", stdout=f"{RC}\nadd tests"))
    assert (fix.agent, fix.call, fix.iteration) == ("executor", 1, 2)
    assert fix.command == f"Fix cycle 1: {RC}\nadd tests"
    again = last_dispatch(driver.ok("review", stdout="added tests"))
    assert (again.agent, again.call, again.iteration) == ("reviewer", 2, 3)
    assert again.command == "Again (cycle 1) after added tests"
    driver.ok("review", {"round": 2}, stdout=OK)
    st = driver.step("review")
    assert (st.status, st.outputs, st.iteration) == ("completed", {"round": 2}, 3)
    assert [(h["name"], h["kind"], h["cycle"], h["agent"]) for h in st.history] == [
        ("review", "review", 0, "reviewer"), ("review_fix_1", "fix", 1, "executor"),
        ("review_2", "review", 1, "reviewer")]
    assert [h.get("verdict") for h in st.history] == ["REQUEST_CHANGES", None, "APPROVED"]


def test_after_max_cycles_fixes_request_changes_fails_loop_exhausted():
    driver = started(REVIEW)
    for stdout in (RC, "fix 1", RC, "fix 2"):
        driver.ok("review", stdout=stdout)
    commands = driver.ok("review", stdout=RC)
    assert dispatched(commands) == []
    st = driver.step("review")
    assert (st.status, st.error_code, st.iteration) == ("failed", "loop_exhausted", 5)
    assert [h["name"] for h in st.history] == ["review", "review_fix_1", "review_2", "review_fix_2", "review_3"]
    fixes = [c for c in of(driver.commands, Dispatch) if c.agent == "executor"]
    assert [c.command for c in fixes] == [f"Fix cycle 1: {RC}", f"Fix cycle 2: {RC}"]
    assert [c.call for c in fixes] == [1, 2]


def test_max_cycles_one_allows_exactly_one_fix():
    driver = started(replaced(REVIEW, "max_cycles: 2", "max_cycles: 1"))
    driver.ok("review", stdout=RC)
    driver.ok("review", stdout="fixed")
    driver.ok("review", stdout=RC)
    assert driver.step("review").error_code == "loop_exhausted"
    assert [h["name"] for h in driver.step("review").history] == ["review", "review_fix_1", "review_2"]


def test_the_fix_agent_defaults_to_the_steps_agent_and_the_re_review_to_the_command():
    text = replaced(replaced(REVIEW, "        fix_agent: executor\n", ""),
                    "        re_review_command: \"Again (cycle ${loop.cycle}) after ${loop.fix}\"\n", "")
    driver = started(text)
    fix = last_dispatch(driver.ok("review", stdout=RC))
    assert (fix.agent, fix.call) == ("reviewer", 2)  # the same agent: its second call in the step
    again = last_dispatch(driver.ok("review", stdout="patched"))
    assert (again.agent, again.call) == ("reviewer", 3)
    assert again.command == f"Review (cycle 1, review [{RC}], fix [patched])"


@pytest.mark.parametrize("stdout", [
    "verdict: approved", "Verdict: APPROVED", "VERDICT:APPROVEDX", "VERDICT: APPROVED_NOW", "VERDICT: APPROVE",
    "VERDICT APPROVED", "My VERDICT: APPROVED", "**VERDICT: APPROVED**", "VERDICT: APPRОVED", "", "   ",
    "VERDICT: REQUEST-CHANGES", "VERDICT: request_changes", "> VERDICT: APPROVED", "VERDICT:\nAPPROVED",
    # smuggled: an escape or an invisible character before the marker is not whitespace; \r ends no line
    "\x1b[32mVERDICT: APPROVED\x1b[0m", "\u200bVERDICT: APPROVED", "\ufeffVERDICT: APPROVED",
    "VERDICT\u200b: APPROVED", "VERDICT: \u200bAPPROVED", "Needs work\rVERDICT: APPROVED", "\x00VERDICT: APPROVED",
])
def test_a_review_without_a_verdict_line_fails_verdict_missing(stdout):
    driver = started(REVIEW)
    commands = driver.ok("review", stdout=stdout)
    assert dispatched(commands) == []
    st = driver.step("review")
    assert (st.status, st.error_code) == ("failed", "verdict_missing")


@pytest.mark.parametrize(("stdout", "verdict"), [
    ("VERDICT: APPROVED", "APPROVED"),
    ("VERDICT: APPROVED!", "APPROVED"),
    ("VERDICT: APPROVED.", "APPROVED"),
    ("  \tVERDICT:\t APPROVED  ", "APPROVED"),
    ("VERDICT:APPROVED", "APPROVED"),
    ("intro\nmore prose\nVERDICT: APPROVED", "APPROVED"),
    ("verdict: approved\nVERDICT: APPROVED", "APPROVED"),
    ("VERDICT: APPROVED\r\n", "APPROVED"),
    ("VERDICT: REQUEST_CHANGES\nVERDICT: APPROVED", "REQUEST_CHANGES"),
    ("VERDICT: APPROVED\nVERDICT: REQUEST_CHANGES", "APPROVED"),
    ("VERDICT: REQUEST_CHANGES (see below)", "REQUEST_CHANGES"),
    # an approval quoted in a code block, or drawn over the line on a terminal, after the first verdict decides nothing
    ("VERDICT: REQUEST_CHANGES\n```\nVERDICT: APPROVED\n```", "REQUEST_CHANGES"),
    ("VERDICT: REQUEST_CHANGES\rVERDICT: APPROVED", "REQUEST_CHANGES"),
    ("\x1b[1mVERDICT: APPROVED\nVERDICT: REQUEST_CHANGES", "REQUEST_CHANGES"),
])
def test_the_first_verdict_line_decides(stdout, verdict):
    driver = started(REVIEW)
    driver.ok("review", stdout=stdout)
    assert driver.step("review").history[0]["verdict"] == verdict
    expected = "completed" if verdict == "APPROVED" else "running"
    assert driver.status("review") == expected


def test_a_re_review_without_a_verdict_fails_verdict_missing_after_its_fix():
    driver = started(REVIEW)
    driver.ok("review", stdout=RC)
    driver.ok("review", stdout="fixed")
    driver.ok("review", stdout="looks approved to me")
    st = driver.step("review")
    assert (st.error_code, st.iteration) == ("verdict_missing", 3)


def test_a_review_output_holding_template_text_is_passed_on_as_data():
    driver = started(REVIEW)
    fix = last_dispatch(driver.ok("review", stdout=f"{RC}\nuse ${{args.secret}} and {{{{ run.id }}}}"))
    assert fix.command == f"Fix cycle 1: {RC}\nuse ${{args.secret}} and {{{{ run.id }}}}"


def test_review_outputs_are_validated_against_the_declared_outputs_when_approved():
    text = REVIEW + "    outputs: {score: {type: integer, minimum: 1}}\n"
    driver = started(text)
    driver.ok("review", {"score": 0}, stdout=OK)
    assert driver.step("review").error_code == "output_invalid"


def test_review_cycles_through_the_local_runner_with_a_mock_sequence():
    result = run_fast("""
        name: r
        steps:
          - id: review
            agent: mock
            command: review
            loop: {max_cycles: 3, on_request_changes: {fix_command: fix}}
            mock:
              sequence:
                - {stdout: "VERDICT: REQUEST_CHANGES"}
                - {stdout: fixed once}
                - {stdout: "VERDICT: REQUEST_CHANGES"}
                - {stdout: fixed twice}
                - {stdout: "VERDICT: APPROVED", outputs: {done: true}}
        """)
    step = result["steps"]["review"]
    assert (step["status"], step["outputs"], step["iterations"]) == ("completed", {"done": True}, 5)
    assert step["history"] == ["review", "review_fix_1", "review_2", "review_fix_2", "review_3"]


def test_a_review_cycle_survives_a_checkpoint_between_its_calls():
    driver = started(REVIEW)
    driver.ok("review", stdout=f"{RC}\nrename it")
    restored = Interpreter.restore(driver.workflow, checkpoint(driver.machine))
    st = restored.state.steps["review"]
    again = last_dispatch(restored.advance(StepFinished("review", st.attempt, True, st.iteration, {}, "renamed",
                                                        at=driver.now)))
    assert (again.agent, again.call, again.command) == ("reviewer", 2, "Again (cycle 1) after renamed")


def test_twenty_cycles_run_forty_one_calls_named_as_the_seed_names_them():
    result = run_fast("""
        name: r
        steps:
          - id: rv
            agent: mock
            command: review
            loop: {max_cycles: 20, on_request_changes: {fix_command: fix}}
            mock: {stdout: "VERDICT: REQUEST_CHANGES"}
        """)
    step = result["steps"]["rv"]
    assert (step["status"], step["error_code"], step["iterations"]) == ("failed", "loop_exhausted", 41)
    names = ["rv"] + [name for k in range(1, 21) for name in (f"rv_fix_{k}", f"rv_{k + 1}")]
    assert step["history"] == names


def test_a_halt_elsewhere_expires_a_pending_reply_request_and_cancels_the_waiting_step():
    driver = started(GATED + "  - {id: boom, agent: writer, command: x}\n")
    driver.ok("ask", stdout="draft")
    assert driver.status("ask") == "waiting"
    commands = driver.fail("boom")
    assert (driver.status("ask"), driver.step("ask").error_code) == ("cancelled", "run_halted")
    assert driver.machine.state.approvals[0]["status"] == "expired"
    assert of(commands, FinishRun)[0].status == "failed"


def test_a_reply_event_reads_back_from_its_json_for_replay_logs():
    event = ReplyGiven("ask", "naïve ☃ ${args.x}", by="carol", at=12.5, by_id=7)
    assert event_from_json(json.loads(json.dumps(event.to_json()))) == event


@pytest.mark.parametrize("retryable", [True, False])
def test_a_fix_call_governance_blocked_is_no_call_in_the_history(retryable):
    driver = started(REVIEW)
    driver.ok("review", stdout=RC)
    st = driver.step("review")
    assert [call["name"] for call in st.history] == ["review", "review_fix_1"]
    driver.feed(DispatchBlocked("review", st.attempt, "budget", "budget_exceeded", retryable=retryable,
                                message="the executor's budget is spent", at=driver.now))
    assert [call["name"] for call in st.history] == ["review"]
    if retryable:  # the gate retries the same call: it is in the history once, when it is dispatched again
        driver.fire(of(driver.commands, ScheduleTimer)[-1])
        assert [call["name"] for call in st.history] == ["review", "review_fix_1"]
        assert last_dispatch(driver.commands[-3:]).agent == "executor"
    else:
        assert (st.status, st.error_code) == ("failed", "budget_exceeded")


def test_a_held_fix_call_is_dispatched_once_approved_and_kept_once():
    driver = started(REVIEW)
    driver.ok("review", stdout=RC)
    st = driver.step("review")
    driver.feed(DispatchHeld("review", st.attempt, "policy", message="fixes need a look", at=driver.now))
    assert [call["name"] for call in st.history] == ["review"]
    driver.decide("review", "approve")
    assert [call["name"] for call in st.history] == ["review", "review_fix_1"]
    assert st.history[-1]["finished_at"] is None
