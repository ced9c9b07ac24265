"""Property tests: random workflows with random failures, policies and decisions."""

import json

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.interpreter import Interpreter, Options, event_from_json
from engine.runner import LocalRunner
from engine.validation import load_workflow
from engine.workflow import failure_policy

POLICIES = ["halt", "skip", "retry_once", "retry_once_then_escalate", "fail", "continue", "retry", "block"]
RULES = ["all_done_default", "all_success", "one_success", "none_failed_min_one_success", "all_done"]


@st.composite
def workflows(draw):
    """A valid workflow document (as a dict) and the decisions that answer every approval it can ask for."""
    count = draw(st.integers(1, 9))
    steps, decisions = [], {}
    for i in range(count):
        step = {"id": f"s{i}"}
        earlier = [f"s{j}" for j in range(i)]
        if earlier:
            step["depends_on"] = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3))
        step["trigger_rule"] = draw(st.sampled_from(RULES))
        if draw(st.integers(0, 5)) == 0:
            step["approval"] = "required"
            decisions[step["id"]] = draw(st.sampled_from(["approve", "reject"]))
            if draw(st.booleans()):
                step["on_reject"] = "continue"
        else:
            step.update(agent="mock", command=f"work {i}")
            mock = {"fail_times": draw(st.integers(0, 4)), "delay_s": draw(st.sampled_from([0, 0, 1, 2.5]))}
            if draw(st.integers(0, 7)) == 0:
                mock["timeout"] = True
                step["timeout"] = 3
            if draw(st.integers(0, 5)) == 0:
                step["loop"] = {"max_iterations": draw(st.integers(1, 3)), "until": "iteration >= 2"}
            step["mock"] = mock
        policy = draw(st.sampled_from(POLICIES))
        if "approval" in step and policy == "retry_once_then_escalate":
            policy = "retry_once"  # one --decide per step cannot answer both the approval and its escalation
        if policy == "block":
            step["retry"] = {"max_retries": draw(st.integers(0, 3)), "backoff_s": draw(st.sampled_from([0, 1, 2]))}
            step["on_failure"] = draw(st.sampled_from(["halt", "skip"]))
        else:
            step["on_failure"] = policy
        if policy == "retry_once_then_escalate" and "approval" not in step:
            decisions[step["id"]] = draw(st.sampled_from(["retry", "skip", "abort"]))
        if draw(st.booleans()):
            step["parallel_failure_policy"] = "fail_fast"
        if draw(st.integers(0, 4)) == 0:
            step["condition"] = draw(st.sampled_from(["vars.flag == true", "vars.flag == false", "not vars.flag"]))
        steps.append(step)
    return {"name": "random_flow", "variables": {"flag": draw(st.booleans())}, "steps": steps}, decisions


def run_recorded(document: dict, decisions: dict, concurrency: int):
    workflow = load_workflow(yaml.safe_dump(document, sort_keys=False))
    entries: list = []
    runner = LocalRunner(workflow, decisions=decisions, fast=True, start_at=0.0, record=entries, run_id="prop",
                         options=Options(max_concurrency=concurrency))
    return workflow, runner.run(), entries


PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(workflows(), st.integers(1, 4))
def test_every_run_reaches_a_final_status_with_every_step_final(case, concurrency):
    document, decisions = case
    workflow, outcome, entries = run_recorded(document, decisions, concurrency)
    assert outcome.status in ("completed", "failed")
    statuses = {step_id: s.status for step_id, s in outcome.state.steps.items()}
    assert set(statuses.values()) <= {"completed", "failed", "timed_out", "skipped", "cancelled"}
    finishes = [c for e in entries for c in e["commands"] if c["type"] == "FinishRun"]
    assert len(finishes) == 1 and finishes[0]["status"] == outcome.status
    bad = {s for s, status in statuses.items() if status in ("failed", "timed_out", "cancelled")}
    assert (outcome.status == "completed") == (not bad)
    for step_id, step in outcome.state.steps.items():
        if step.status == "completed":
            assert isinstance(step.outputs, dict)


@PROPERTY_SETTINGS
@given(workflows(), st.integers(1, 4))
def test_a_step_is_never_dispatched_twice_except_by_retry(case, concurrency):
    document, decisions = case
    workflow, outcome, entries = run_recorded(document, decisions, concurrency)
    in_flight: set[str] = set()
    seen: dict[str, list[tuple[int, int]]] = {}
    for entry in entries:
        event = entry["event"]
        if event["type"] == "StepFinished":
            in_flight.discard(event["step"])
        for command in entry["commands"]:
            if command["type"] == "CancelStep":
                in_flight.discard(command["step"])
            elif command["type"] == "StepChanged" and command["status"] != "running":
                in_flight.discard(command["step"])
            elif command["type"] == "Dispatch":
                step = command["step"]
                assert step not in in_flight, f"{step} dispatched while its attempt was in flight"
                in_flight.add(step)
                seen.setdefault(step, []).append((command["attempt"], command["iteration"]))
    for step, dispatches in seen.items():
        assert dispatches == sorted(set(dispatches)), f"{step} repeated a dispatch: {dispatches}"
        spec = workflow.by_id[step]
        attempts = max(a for a, _ in dispatches)
        escalation = 1 if spec.policy.terminal == "escalate" else 0
        assert attempts <= 1 + failure_policy(spec.model).max_retries + escalation
        assert attempts == outcome.state.steps[step].attempt


@PROPERTY_SETTINGS
@given(workflows(), st.integers(1, 4), st.data())
def test_a_state_restored_mid_run_gives_the_same_remaining_commands(case, concurrency, data):
    document, decisions = case
    workflow, outcome, entries = run_recorded(document, decisions, concurrency)
    cut = data.draw(st.integers(0, len(entries)))
    original = Interpreter.new(workflow, run_id="prop", options=Options(max_concurrency=concurrency))
    for entry in entries[:cut]:
        original.advance(event_from_json(entry["event"]))
    checkpoint = json.loads(json.dumps(original.state.to_json()))
    restored = Interpreter.restore(workflow, checkpoint)
    for entry in entries[cut:]:
        event = event_from_json(entry["event"])
        got = json.loads(json.dumps([c.to_json() for c in restored.advance(event)]))
        assert got == entry["commands"]
    assert restored.state.to_json() == outcome.state.to_json()
