"""Ready steps, dispatch order, concurrency, conditions, trigger rules and the end of a run."""

from engine.interpreter import Dispatch, FinishRun, ScheduleTimer, StepChanged

from tests.engine.interpreter.support import Driver, dispatched, of, run_fast

DIAMOND = """
name: diamond
steps:
  - {id: d, agent: mock, command: join, depends_on: [c, b]}
  - {id: c, agent: mock, command: right, depends_on: [a]}
  - {id: b, agent: mock, command: left, depends_on: [a]}
  - {id: a, agent: mock, command: start}
"""


def test_it_dispatches_nothing_before_the_run_starts():
    driver = Driver(DIAMOND)
    assert driver.machine.state.status == "pending"
    assert dispatched(driver.commands) == []


def test_it_dispatches_the_steps_without_dependencies_when_the_run_starts():
    driver = Driver(DIAMOND)
    assert dispatched(driver.start()) == ["a"]
    assert driver.status("a") == "running"
    assert driver.status("b") == "pending"


def test_it_dispatches_every_ready_step_sorted_by_id_before_any_completion():
    driver = Driver(DIAMOND)
    driver.start()
    assert dispatched(driver.ok("a")) == ["b", "c"]
    assert dispatched(driver.ok("c")) == []
    assert dispatched(driver.ok("b")) == ["d"]
    commands = driver.ok("d")
    assert of(commands, FinishRun) == [FinishRun("completed", None, None)]
    assert driver.machine.state.dispatch_order == ["a", "b", "c", "d"]


def test_a_dispatch_carries_the_rendered_command_and_a_timeout_timer():
    driver = Driver("""
        name: render
        variables: {region: eu}
        steps:
          - {id: a, agent: mock, command: "report for ${vars.region}", timeout: 90}
    """)
    commands = driver.start()
    dispatch = of(commands, Dispatch)[0]
    assert (dispatch.step, dispatch.attempt, dispatch.command, dispatch.timeout_s) == ("a", 1, "report for eu", 90.0)
    timer = of(commands, ScheduleTimer)[0]
    assert (timer.purpose, timer.step, timer.fire_at) == ("timeout", "a", driver.now + 90)


def test_the_default_step_timeout_comes_from_the_options():
    driver = Driver("name: t\nsteps:\n  - {id: a, agent: mock, command: x}\n", default_timeout_s=120)
    assert of(driver.start(), Dispatch)[0].timeout_s == 120


def test_it_keeps_no_more_steps_in_flight_than_the_concurrency_limit():
    steps = "\n".join(f"  - {{id: s{i}, agent: mock, command: x}}" for i in range(5))
    driver = Driver(f"name: wide\nsteps:\n{steps}\n", max_concurrency=2)
    assert dispatched(driver.start()) == ["s0", "s1"]
    assert driver.status("s2") == "pending" and driver.step("s2").wait == "queued"
    assert dispatched(driver.ok("s1")) == ["s2"]
    assert dispatched(driver.ok("s0")) == ["s3"]


def test_approval_and_sub_workflow_steps_do_not_take_a_concurrency_slot():
    driver = Driver("""
        name: slots
        steps:
          - {id: a_gate, approval: required}
          - {id: b_work, agent: mock, command: x}
    """, max_concurrency=1)
    commands = driver.start()
    assert dispatched(commands) == ["b_work"]
    assert driver.status("a_gate") == "waiting"


def test_a_false_condition_skips_the_step_and_a_true_one_runs_it():
    result = run_fast("""
        name: cond
        variables: {tier: basic}
        steps:
          - {id: premium, agent: mock, command: x, condition: "vars.tier == 'premium'"}
          - {id: basic, agent: mock, command: x, condition: "tier == 'basic'"}
    """)
    assert result["steps"]["premium"]["status"] == "skipped"
    assert result["steps"]["premium"]["error"] is None
    assert result["steps"]["basic"]["status"] == "completed"
    assert result["status"] == "completed"


def test_a_condition_reads_the_outputs_of_the_step_it_depends_on():
    result = run_fast("""
        name: cond
        steps:
          - {id: src, agent: mock, command: x, mock: {outputs: {score: 7}}}
          - {id: high, agent: mock, command: x, condition: "src.outputs.score > 5"}
          - {id: low, agent: mock, command: x, condition: "src.score <= 5"}
    """)
    assert result["layers"] == [["src"], ["high", "low"]]
    assert (result["steps"]["high"]["status"], result["steps"]["low"]["status"]) == ("completed", "skipped")


def test_a_condition_that_cannot_be_evaluated_fails_the_step_with_condition_error():
    result = run_fast("""
        name: cond
        variables: {pattern: "("}
        steps:
          - {id: a, agent: mock, command: x, condition: "matches('text', vars.pattern)"}
    """)
    assert result["steps"]["a"]["status"] == "failed"
    assert result["steps"]["a"]["error_code"] == "condition_error"
    assert result["status"] == "failed"


def test_skips_cascade_only_when_every_dependency_was_skipped():
    result = run_fast("""
        name: cascade
        steps:
          - {id: never, agent: mock, command: x, condition: "false"}
          - {id: ok, agent: mock, command: x}
          - {id: only_never, agent: mock, command: x, depends_on: [never]}
          - {id: both, agent: mock, command: x, depends_on: [never, ok]}
          - {id: deeper, agent: mock, command: x, depends_on: [only_never]}
    """)
    statuses = {k: v["status"] for k, v in result["steps"].items()}
    assert statuses == {"never": "skipped", "ok": "completed", "only_never": "skipped", "both": "completed",
                        "deeper": "skipped"}


def test_step_changes_are_announced_in_order_for_the_live_view():
    driver = Driver("name: one\nsteps:\n  - {id: a, agent: mock, command: x}\n")
    driver.start()
    driver.ok("a", {"n": 1})
    seen = [(c.status, c.wait) for c in of(driver.commands, StepChanged)]
    assert seen == [("pending", "queued"), ("running", None), ("completed", None)]


def test_completed_outputs_merge_into_variables_in_completion_order():
    driver = Driver("""
        name: vars
        variables: {region: eu, score: 0}
        steps:
          - {id: a, agent: mock, command: x}
          - {id: b, agent: mock, command: x}
    """)
    driver.start()
    driver.ok("b", {"score": 2, "label": "b"})
    driver.ok("a", {"score": 1})
    state = driver.machine.state
    assert state.variables == {"region": "eu", "score": 1, "label": "b"}
    assert state.variable_order == [["score", "b"], ["label", "b"], ["score", "a"]]


def test_a_run_argument_overrides_a_document_variable():
    driver = Driver("""
        name: vars
        variables: {region: eu}
        args: {region: {type: string}}
        steps:
          - {id: a, agent: mock, command: "in ${region} / ${args.region} / ${vars.region}"}
    """, args={"region": "us"})
    assert of(driver.start(), Dispatch)[0].command == "in us / us / us"


def test_run_facts_are_available_to_templates():
    driver = Driver("name: r\nsteps:\n  - {id: a, agent: mock, command: 'run ${run.id} at ${run.started_at}'}\n")
    command = of(driver.start(), Dispatch)[0].command
    assert command.startswith("run run-1 at 1970-01-01T00:16:40")


def test_inputs_resolve_from_upstream_outputs_and_are_coerced():
    driver = Driver("""
        name: inputs
        steps:
          - {id: src, agent: mock, command: x}
          - id: use
            agent: mock
            command: x
            inputs:
              count: {from: "src.outputs.count", type: integer}
              note: {from: "src.outputs.note", required: false}
    """)
    driver.start()
    dispatch = of(driver.ok("src", {"count": "4"}), Dispatch)[0]
    assert dispatch.inputs == {"count": 4}


def test_a_required_input_that_does_not_resolve_fails_the_step_with_input_missing():
    result = run_fast("""
        name: inputs
        steps:
          - {id: src, agent: mock, command: x, mock: {outputs: {}}}
          - id: use
            agent: mock
            command: x
            inputs: {count: {from: "src.outputs.count"}}
    """)
    assert result["steps"]["use"]["status"] == "failed"
    assert result["steps"]["use"]["error_code"] == "input_missing"


def test_stdin_is_the_upstream_stdout_or_value_as_text():
    driver = Driver("""
        name: stdin
        steps:
          - {id: src, agent: mock, command: x}
          - {id: raw, agent: mock, command: x, stdin: "$src.stdout"}
          - {id: field, agent: mock, command: x, stdin: "$src.outputs.total"}
    """)
    driver.start()
    commands = driver.ok("src", {"total": 12}, stdout="line one\n")
    stdin = {c.step: c.stdin for c in of(commands, Dispatch)}
    assert stdin == {"field": "12", "raw": "line one\n"}


def test_a_run_that_only_skips_completes():
    result = run_fast("name: s\nsteps:\n  - {id: a, agent: mock, command: x, condition: 'false'}\n")
    assert result["status"] == "completed"


def test_ready_approval_and_agent_steps_are_dispatched_in_id_order():
    # Spec 4: "find ready steps (every dependency resolved), sorted by id; evaluate conditions;
    # dispatch". FORMAT 4: "`dispatch_order`: ids in the order the steps were first dispatched";
    # FORMAT 5: "The loop dispatches every ready step (sorted by id) before it applies any completion".
    result = run_fast("""
        name: order
        steps:
          - {id: a_work, agent: mock, command: x}
          - {id: b_gate, approval: required}
          - {id: c_work, agent: mock, command: x}
    """, decisions={"b_gate": "approve"})
    assert result["status"] == "completed"
    assert result["dispatch_order"] == ["a_work", "b_gate", "c_work"]
