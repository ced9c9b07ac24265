"""Restart-from-step: completed steps outside the restarted step's dependents carry over."""

import pytest

from engine.interpreter import Interpreter, RunStarted, restart_state, steps_to_rerun
from engine.report import report
from engine.runner import LocalRunner

from tests.engine.interpreter.support import Driver, compile_yaml, dispatched

PIPELINE = """
name: pipeline
variables: {stage: none}
steps:
  - {id: fetch, agent: mock, command: fetch, mock: {outputs: {rows: 10, stage: fetched}}}
  - {id: side, agent: mock, command: side, mock: {outputs: {note: side done}}}
  - {id: parse, agent: mock, command: "parse ${fetch.outputs.rows}", depends_on: [fetch],
     mock: {outputs: {stage: parsed}, fail_times: 1}}
  - {id: report, agent: mock, command: report, depends_on: [parse]}
  - {id: never_ran, agent: mock, command: x, depends_on: [side], condition: "vars.stage == 'x'"}
"""


def failed_run():
    workflow = compile_yaml(PIPELINE)
    outcome = LocalRunner(workflow, fast=True, start_at=0.0, run_id="first").run()
    assert outcome.status == "failed"
    return workflow, outcome.state


def test_the_restarted_step_and_its_transitive_dependents_run_again():
    workflow, _ = failed_run()
    assert steps_to_rerun(workflow, "parse") == {"parse", "report"}
    assert steps_to_rerun(workflow, "fetch") == {"fetch", "parse", "report"}
    with pytest.raises(ValueError, match="no step"):
        steps_to_rerun(workflow, "nope")


def test_completed_steps_outside_them_are_carried_over_with_their_outputs():
    workflow, previous = failed_run()
    state = restart_state(workflow, previous, "parse", run_id="second")
    fetch = state.steps["fetch"]
    assert (fetch.status, fetch.carried, fetch.outputs) == ("completed", True, {"rows": 10, "stage": "fetched"})
    assert state.steps["side"].carried
    assert state.steps["parse"].status == "pending" and not state.steps["parse"].carried
    assert state.steps["never_ran"].status == "pending"  # skipped steps are decided again


def test_variables_and_their_overwrite_order_are_rebuilt_from_the_carried_steps_only():
    workflow, previous = failed_run()
    state = restart_state(workflow, previous, "fetch", run_id="second")
    assert state.variables == {"stage": "none", "note": "side done"}
    assert state.variable_order == [["note", "side"]]
    state = restart_state(workflow, previous, "parse", run_id="second")
    assert state.variables == {"stage": "fetched", "rows": 10, "note": "side done"}
    assert [owner for _, owner in state.variable_order] == [o for _, o in previous.variable_order
                                                              if o in ("fetch", "side")]


def test_a_restarted_run_dispatches_only_what_runs_again_and_can_complete():
    workflow, previous = failed_run()
    state = restart_state(workflow, previous, "parse", run_id="second")
    machine = Interpreter.new(workflow, run_id="second", state=state)
    commands = machine.advance(RunStarted(at=10.0))
    assert dispatched(commands) == ["parse"]
    assert next(c for c in commands if c.__class__.__name__ == "Dispatch").command == "parse 10"


def test_a_restart_with_the_missing_argument_completes_and_keeps_the_carried_steps():
    workflow = compile_yaml("""
        name: publish
        args: {token: {type: string}}
        steps:
          - {id: build, agent: mock, command: build, mock: {outputs: {artifact: app.tar}}}
          - {id: upload, agent: mock, command: "upload ${build.outputs.artifact} with ${token}", depends_on: [build]}
          - {id: announce, agent: mock, command: announce, depends_on: [upload]}
    """)
    first = LocalRunner(workflow, fast=True, run_id="first").run()
    assert first.state.steps["upload"].error_code == "template_error"
    state = restart_state(workflow, first.state, "upload", run_id="second", args={"token": "t0k"})
    result = report(LocalRunner(workflow, fast=True, run_id="second", state=state).run())
    assert result["status"] == "completed"
    assert result["dispatch_order"] == ["upload", "announce"]
    assert result["steps"]["build"]["status"] == "completed"
    assert result["variables"]["artifact"] == "app.tar"


def test_a_restart_needs_a_previous_run_of_the_same_workflow():
    workflow, previous = failed_run()
    other = compile_yaml("name: other\nsteps:\n  - {id: parse, agent: mock, command: x}\n")
    with pytest.raises(ValueError, match="another version"):
        restart_state(other, previous, "parse", run_id="x")


def test_args_of_the_previous_run_are_kept_unless_new_ones_are_given():
    driver = Driver("""
        name: a
        args: {who: {type: string}}
        steps:
          - {id: hello, agent: mock, command: "hi ${args.who}"}
    """, args={"who": "ann"})
    driver.start()
    driver.ok("hello")
    kept = restart_state(driver.workflow, driver.machine.state, "hello", run_id="r2")
    given = restart_state(driver.workflow, driver.machine.state, "hello", run_id="r3", args={"who": "bob"})
    assert (kept.args, kept.variables["who"]) == ({"who": "ann"}, "ann")
    assert (given.args, given.variables["who"]) == ({"who": "bob"}, "bob")


def test_a_carried_loop_step_keeps_its_calls():
    workflow = compile_yaml("""
        name: carried_loop
        steps:
          - id: review
            agent: mock
            command: review
            loop: {max_cycles: 1, on_request_changes: {fix_command: fix}}
            mock: {sequence: [{stdout: "VERDICT: REQUEST_CHANGES"}, {stdout: fixed}, {stdout: "VERDICT: APPROVED"}]}
          - id: after
            agent: mock
            command: after
            depends_on: [review]
    """)
    before = LocalRunner(workflow, fast=True).run().state
    state = restart_state(workflow, before, "after", run_id="again")
    assert [call["name"] for call in state.steps["review"].history] == ["review", "review_fix_1", "review_2"]
    assert state.steps["after"].history == []
