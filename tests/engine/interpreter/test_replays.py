"""Golden replays: recorded event logs must give the same commands, event for event.

Regenerate the logs after an intended change of behaviour with
`.venv/bin/python -m tests.engine.interpreter.test_replays` and review the diff.
"""

import copy
import json
import sys
from pathlib import Path

import pytest

from engine.interpreter import ReplayDivergence, replay_log
from engine.runner import LocalRunner
from engine.validation import load_workflow

REPLAYS = Path(__file__).resolve().parent.parent / "replays"

CASES = {
    "retries_and_backoff": ("""
name: retries_and_backoff
steps:
  - {id: fetch, agent: mock, command: fetch, on_failure: retry, mock: {fail_times: 2, outputs: {n: 3}}}
  - {id: parse, agent: mock, command: "parse ${fetch.outputs.n}", depends_on: [fetch], retry: {max_retries: 1}}
  - {id: report, agent: mock, command: report, depends_on: [parse], mock: {delay_s: 2}}
""", {}),
    "approvals_and_escalation": ("""
name: approvals_and_escalation
steps:
  - {id: prepare, agent: mock, command: prepare, mock: {outputs: {amount: 120}}}
  - {id: gate, approval: required, approval_message: "Pay ${prepare.outputs.amount}?", depends_on: [prepare]}
  - {id: flaky, agent: mock, command: pay, depends_on: [gate], on_failure: retry_once_then_escalate,
     mock: {fail_times: 2}}
  - {id: notify, agent: mock, command: notify, depends_on: [flaky], condition: "$gate.approved"}
""", {"gate": "approve", "flaky": "retry"}),
    "halt_fail_fast_and_cleanup": ("""
name: halt_fail_fast_and_cleanup
steps:
  - {id: slow, agent: mock, command: slow, mock: {delay_s: 30}}
  - {id: boom, agent: mock, command: boom, parallel_failure_policy: fail_fast, mock: {fail_times: 1, delay_s: 1}}
  - {id: after, agent: mock, command: after, depends_on: [boom]}
  - {id: cleanup, agent: mock, command: cleanup, depends_on: [slow, boom], trigger_rule: all_done}
""", {}),
    "loop_timeout_and_skip": ("""
name: loop_timeout_and_skip
steps:
  - {id: poll, agent: mock, command: poll, loop: {max_iterations: 3, until: "iteration >= 2"}, mock: {stdout: waiting}}
  - {id: hang, agent: mock, command: hang, timeout: 5, on_failure: skip, mock: {timeout: true}}
  - {id: join, agent: mock, command: join, depends_on: [poll, hang], trigger_rule: none_failed_min_one_success}
""", {}),
}


def record(name: str) -> dict:
    text, decisions = CASES[name]
    entries: list = []
    runner = LocalRunner(load_workflow(text), decisions=decisions, fast=True, start_at=0.0, record=entries,
                         run_id=f"replay-{name}")
    runner.run()
    options = runner.options.to_json()
    return {"workflow": text, "log": {"run_id": runner.run_id, "args": {}, "options": options, "entries": entries}}


def load(name: str) -> dict:
    return json.loads((REPLAYS / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_recorded_log_replays_to_identical_commands(name):
    case = load(name)
    assert case["workflow"] == CASES[name][0], "the stored log was recorded from another workflow"
    machine = replay_log(load_workflow(case["workflow"]), case["log"])
    assert machine.finished
    assert len(case["log"]["entries"]) >= 3


def test_a_log_whose_recorded_commands_differ_is_rejected_at_that_event():
    case = load("retries_and_backoff")
    log = copy.deepcopy(case["log"])
    index = next(i for i, e in enumerate(log["entries"]) if any(c["type"] == "Dispatch" for c in e["commands"]))
    dispatch = next(c for c in log["entries"][index]["commands"] if c["type"] == "Dispatch")
    dispatch["command"] = "something else"
    with pytest.raises(ReplayDivergence) as caught:
        replay_log(load_workflow(case["workflow"]), log)
    assert caught.value.index == index


def test_a_log_replayed_against_a_changed_workflow_is_rejected():
    case = load("retries_and_backoff")
    changed = case["workflow"].replace("retry: {max_retries: 1}", "retry: {max_retries: 1, backoff_s: 9}")
    log = copy.deepcopy(case["log"])
    for entry in log["entries"]:  # make the parse step fail so its backoff shows
        if entry["event"]["type"] == "StepFinished" and entry["event"]["step"] == "parse":
            entry["event"].update(ok=False, error="boom", outputs=None)
            break
    with pytest.raises(ReplayDivergence):
        replay_log(load_workflow(changed), log)


if __name__ == "__main__":
    REPLAYS.mkdir(exist_ok=True)
    for case_name in sorted(CASES):
        path = REPLAYS / f"{case_name}.json"
        path.write_text(json.dumps(record(case_name), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
