"""A step's `agent_config` (spec 15): validated with its line, carried by each dispatch of the step's own agent,
ignored by the local runner; and the telemetry fields of a result, which old logs do not have."""

import json

import pytest

from engine.interpreter import Dispatch, StepFinished
from engine.interpreter.commands import command_from_json
from engine.interpreter.events import event_from_json
from engine.validation import validate_source
from tests.engine.interpreter.support import Driver, of, run_fast

STEP = "name: wf\nsteps:\n  - id: a\n    agent: writer\n    command: go\n"


def problems(extra: str):
    return [(p.code, p.message, p.line) for p in validate_source(STEP + extra).problems]


def test_a_full_agent_config_is_valid():
    assert problems("    agent_config: {model: gpt-4.1, reasoning_effort: high, temperature: 0.2, max_tokens: 4000}\n"
                    ) == []


@pytest.mark.parametrize("extra, code, says", [
    ("    agent_config: big\n", "bad_type", "`agent_config` must be a mapping; got 'big'"),
    ("    agent_config: {model: 3}\n", "bad_type", "`agent_config.model` must be a string; got 3"),
    ("    agent_config: {model: ''}\n", "bad_type", "`agent_config.model`"),
    ("    agent_config: {temperature: 2.5}\n", "bad_type", "`agent_config.temperature` must be less than or equal to 2"),
    ("    agent_config: {temperature: '0.5'}\n", "bad_type", "`agent_config.temperature` must be a number"),
    ("    agent_config: {max_tokens: 0}\n", "bad_type", "`agent_config.max_tokens` must be greater than or equal to 1"),
    ("    agent_config: {max_tokens: 1.5}\n", "bad_type", "`agent_config.max_tokens` must be an integer"),
    ("    agent_config: {reasoning_effort: extreme}\n", "bad_type",
     "`agent_config.reasoning_effort` must be one of 'minimal', 'low', 'medium' or 'high'; got 'extreme'"),
    ("    agent_config: {top_p: 1}\n", "unknown_key", "unknown key 'top_p'"),
])
def test_a_wrong_agent_config_is_refused_with_its_line(extra, code, says):
    [(got, message, line)] = problems(extra)
    assert got == code and message.startswith(says) and line == 6


@pytest.mark.parametrize("extra, says", [
    ("    artifacts: [/etc/passwd]\n", "`artifacts.0` must be relative to the run's directory, not an absolute path"),
    ("    artifacts: [out.json, ../x/*]\n", "`artifacts.1` must stay inside the run's directory (no '..' segment)"),
    ("    artifacts: [a/../../b]\n", "`artifacts.0` must stay inside the run's directory"),
    ("    artifacts: ['a\\\\b']\n", "`artifacts.0` must not contain a NUL or a backslash"),
    ("    artifacts: ['']\n", "`artifacts.0` must be a non-empty glob"),
    ("    artifacts: [3]\n", "`artifacts.0` must be a string"),
    ("    artifacts: out.json\n", "`artifacts` must be a list"),
])
def test_an_artifacts_glob_outside_the_run_directory_is_refused_with_its_line(extra, says):
    [(code, message, line)] = problems(extra)
    assert code == "bad_type" and message.startswith(says) and line == 6


def test_relative_artifacts_globs_are_valid():
    assert problems("    artifacts: [report/*.pdf, out.json, '**/*.log', ./x]\n") == []


def test_more_than_100_artifacts_globs_are_refused():
    [(code, message, _)] = problems(f"    artifacts: {json.dumps([f'f{n}' for n in range(101)])}\n")
    assert code == "bad_type" and "artifacts" in message


OVERLAY = """
name: wf
steps:
  - id: write
    agent: writer
    command: go
    agent_config: {model: big, temperature: 0.5}
  - id: plain
    agent: writer
    command: go
"""


def test_each_dispatch_of_the_step_carries_its_agent_config_and_a_step_without_one_carries_none():
    driver = Driver(OVERLAY)
    dispatches = {d.step: d for d in of(driver.start(), Dispatch)}
    assert dispatches["write"].agent_config == {"model": "big", "temperature": 0.5}
    assert dispatches["plain"].agent_config == {}
    assert "agent_config" not in dispatches["plain"].to_json()  # older logs replay unchanged
    assert command_from_json(json.loads(json.dumps(dispatches["write"].to_json()))) == dispatches["write"]


def test_a_review_cycle_fix_agent_keeps_its_own_settings():
    driver = Driver("""
name: review
steps:
  - id: review
    agent: reviewer
    command: review
    agent_config: {model: big}
    loop:
      max_cycles: 1
      on_request_changes: {fix_command: fix, fix_agent: executor}
""")
    [review] = of(driver.start(), Dispatch)
    [fix] = of(driver.ok("review", stdout="VERDICT: REQUEST_CHANGES"), Dispatch)
    assert (review.agent, review.agent_config) == ("reviewer", {"model": "big"})
    assert (fix.agent, fix.agent_config) == ("executor", {})


def test_the_local_runner_ignores_agent_config():
    report = run_fast("""
name: wf
steps:
  - {id: a, agent: mock, command: go, agent_config: {model: big, max_tokens: 5}, mock: {stdout: done}}
""")
    assert report["status"] == "completed"


def test_a_result_carries_model_and_token_split_through_json_and_an_old_one_loads_without_them():
    event = StepFinished("a", 1, True, tokens=7, model="m-1", input_tokens=3, output_tokens=4, at=2.0)
    assert event_from_json(json.loads(json.dumps(event.to_json()))) == event
    old = {k: v for k, v in event.to_json().items() if k not in ("model", "input_tokens", "output_tokens")}
    loaded = event_from_json(old)
    assert (loaded.model, loaded.input_tokens, loaded.output_tokens, loaded.tokens) == (None, 0, 0, 7)
