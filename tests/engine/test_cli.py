"""`python -m engine validate|plan|run` as a user runs it (spec section 12, conformance FORMAT.md)."""

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

VALID = """\
name: demo
steps:
  - id: fetch
    agent: mock
    command: fetch the vendor file
    mock: {outputs: {risk: 3}}
  - id: review
    agent: mock
    command: review it
    depends_on: [fetch]
  - id: report
    agent: shell
    command: |
      echo noise; echo '{"done": true}'
    depends_on: [fetch]
"""

GATED = """\
name: gated
steps:
  - id: prepare
    agent: mock
    command: prepare
  - id: gate
    approval: required
    depends_on: [prepare]
  - id: ship
    agent: mock
    command: ship
    depends_on: [gate]
"""

FAILING = """\
name: failing
steps:
  - id: flaky
    agent: mock
    command: try
    mock: {fail_times: 5, error: vendor API down}
  - id: after
    agent: mock
    command: after
    depends_on: [flaky]
"""

INVALID = """\
name: broken
steps:
  - id: a
    agent: mock
    command: a
    depends_on: [b]
  - id: b
    agent: mock
    command: b
    depends_on: [a]
"""


def write(directory, name, text):
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def engine(*argv, timeout=60):
    return subprocess.run([sys.executable, "-m", "engine", *map(str, argv)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def engine_json(*argv, timeout=60):
    result = engine(*argv, "--json", timeout=timeout)
    value = json.loads(result.stdout)  # exactly one JSON document, nothing else
    assert isinstance(value, dict)
    return result.returncode, value


# -- validate and plan -------------------------------------------------------------


def test_validate_exits_0_for_a_valid_file(tmp_path):
    code, report = engine_json("validate", write(tmp_path, "w.yaml", VALID))
    assert code == 0 and report == {"valid": True, "problems": [], "warnings": []}


def test_validate_exits_1_and_names_the_cycle_for_an_invalid_file(tmp_path):
    code, report = engine_json("validate", write(tmp_path, "w.yaml", INVALID))
    assert code == 1 and report["valid"] is False
    cycle = [p for p in report["problems"] if p["code"] == "cycle"]
    assert cycle and "a -> b -> a" in cycle[0]["message"]


def test_validate_exits_1_for_malformed_yaml(tmp_path):
    code, report = engine_json("validate", write(tmp_path, "w.yaml", "name: x\nsteps: [\n"))
    assert code == 1 and [p["code"] for p in report["problems"]] == ["yaml_error"]


@pytest.mark.parametrize("command", ["validate", "plan", "run"])
def test_a_missing_file_exits_2_with_code_unreadable(command, tmp_path):
    code, report = engine_json(command, tmp_path / "missing.yaml")
    assert code == 2 and report["valid"] is False
    assert [p["code"] for p in report["problems"]] == ["unreadable"]


@pytest.mark.parametrize("command", ["validate", "plan", "run"])
def test_a_directory_given_as_the_file_exits_2_with_code_unreadable(command, tmp_path):
    code, report = engine_json(command, tmp_path)
    assert code == 2 and [p["code"] for p in report["problems"]] == ["unreadable"]


def test_plan_prints_the_layers_with_ids_sorted(tmp_path):
    code, plan = engine_json("plan", write(tmp_path, "w.yaml", VALID))
    assert code == 0 and plan == {"layers": [["fetch"], ["report", "review"]]}


def test_plan_of_an_invalid_file_exits_2_and_prints_the_validate_object(tmp_path):
    code, report = engine_json("plan", write(tmp_path, "w.yaml", INVALID))
    assert code == 2 and report["valid"] is False and "cycle" in [p["code"] for p in report["problems"]]


def test_without_json_validate_and_plan_print_human_text(tmp_path):
    path = write(tmp_path, "w.yaml", VALID)
    validated, planned, broken = engine("validate", path), engine("plan", path), engine("validate", tmp_path / "x")
    assert validated.returncode == 0 and "valid" in validated.stdout
    assert planned.returncode == 0 and "fetch" in planned.stdout and "report, review" in planned.stdout
    assert broken.returncode == 2 and "unreadable" in broken.stdout + broken.stderr
    for result in (validated, planned):
        with pytest.raises(ValueError):
            json.loads(result.stdout)


# -- run ---------------------------------------------------------------------------


def test_a_completed_run_exits_0_and_reports_every_step(tmp_path):
    code, run = engine_json("run", write(tmp_path, "w.yaml", VALID), "--fast")
    assert code == 0 and run["status"] == "completed" and run["error"] is None
    assert run["layers"] == [["fetch"], ["report", "review"]]
    assert run["dispatch_order"] == ["fetch", "report", "review"]
    assert {step: s["status"] for step, s in run["steps"].items()} == {
        "fetch": "completed", "review": "completed", "report": "completed"}
    assert run["steps"]["fetch"]["outputs"] == {"risk": 3}
    assert run["steps"]["report"]["stdout"] == 'noise\n{"done": true}\n'
    assert run["steps"]["report"]["outputs"] == {"done": True}
    assert run["variables"] == {"risk": 3, "done": True}


def test_a_failed_run_exits_1_and_the_dependent_is_upstream_failed(tmp_path):
    code, run = engine_json("run", write(tmp_path, "w.yaml", FAILING), "--fast")
    assert code == 1 and run["status"] == "failed"
    assert run["steps"]["flaky"]["status"] == "failed"
    assert "vendor API down" in run["steps"]["flaky"]["error"]
    assert run["steps"]["after"]["error_code"] == "upstream_failed"


def test_a_run_waiting_for_an_undecided_approval_exits_3_paused(tmp_path):
    code, run = engine_json("run", write(tmp_path, "w.yaml", GATED), "--fast")
    assert code == 3 and run["status"] == "paused"
    assert run["steps"]["gate"]["status"] == "waiting" and run["steps"]["ship"]["status"] == "pending"
    assert run["approvals"] == [{"step": "gate", "kind": "approval", "status": "pending", "decision": None}]


def test_a_paused_run_in_real_time_exits_promptly(tmp_path):
    path = write(tmp_path, "w.yaml", GATED)
    try:
        result = engine("run", path, "--json", timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("a run paused for an approval was still running after 300 s")
    assert result.returncode == 3 and json.loads(result.stdout)["status"] == "paused"


def test_an_invalid_file_given_to_run_exits_2_with_the_validate_object(tmp_path):
    code, report = engine_json("run", write(tmp_path, "w.yaml", INVALID), "--fast")
    assert code == 2 and report["valid"] is False


@pytest.mark.parametrize("decision, code, gate_status, ship_status", [
    ("approve", 0, "completed", "completed"), ("reject", 1, "failed", "failed"),
])
def test_a_decide_answer_is_applied_when_the_approval_is_requested(tmp_path, decision, code, gate_status,
                                                                   ship_status):
    exit_code, run = engine_json("run", write(tmp_path, "w.yaml", GATED), "--fast", "--decide", f"gate={decision}")
    assert exit_code == code
    assert run["steps"]["gate"]["status"] == gate_status and run["steps"]["ship"]["status"] == ship_status
    assert run["approvals"][0]["decision"] == decision


def test_without_json_run_prints_a_human_summary_and_progress_on_stderr(tmp_path):
    result = engine("run", write(tmp_path, "w.yaml", VALID), "--fast")
    assert result.returncode == 0
    assert "run completed" in result.stdout and "review" in result.stdout
    assert "fetch" in result.stderr
    with pytest.raises(ValueError):
        json.loads(result.stdout)


@pytest.mark.parametrize("argv", [
    ["validate"], ["plan"], ["run", "--fast"], ["run", "--fast", "--decide", "nope=approve"],
])
def test_json_mode_prints_one_json_object_on_stdout_and_nothing_else(tmp_path, argv):
    command, *rest = argv
    result = engine(command, write(tmp_path, "w.yaml", VALID), *rest, "--json")
    assert result.stdout.endswith("}\n") and result.stdout.count("\n") == 1
    assert isinstance(json.loads(result.stdout), dict)


def test_fast_makes_a_thirty_second_mock_delay_finish_at_once(tmp_path):
    path = write(tmp_path, "w.yaml", """\
        name: slow
        steps:
          - id: wait
            agent: mock
            command: wait
            mock: {delay_s: 3600, outputs: {v: 1}}
        """)
    code, run = engine_json("run", path, "--fast", timeout=300)  # in real time it would take an hour
    assert code == 0 and run["steps"]["wait"]["outputs"] == {"v": 1}


def test_fast_keeps_timeouts_a_long_delay_under_a_short_timeout_times_out(tmp_path):
    path = write(tmp_path, "w.yaml", """\
        name: slow
        steps:
          - id: wait
            agent: mock
            command: wait
            timeout: 2s
            mock: {delay_s: 10}
        """)
    code, run = engine_json("run", path, "--fast", timeout=30)
    assert code == 1 and run["steps"]["wait"]["status"] == "timed_out"


# -- arguments and decisions ---------------------------------------------------------

ARGS = """\
name: with_args
args:
  count: {type: integer, required: true}
  ratio: {type: number}
  flag: {type: boolean}
  tags: {type: array}
  meta: {type: object}
  code: {type: string}
  region: {type: string, default: eu}
steps:
  - id: echo
    agent: shell
    command: echo ${args.count} ${args.region}
"""


def test_args_are_coerced_to_their_declared_types(tmp_path):
    code, run = engine_json("run", write(tmp_path, "w.yaml", ARGS), "--fast", "--arg", "count=7",
                            "--arg", "ratio=2.5", "--arg", "flag=yes", "--arg", 'tags=["a", "b"]',
                            "--arg", 'meta={"k": 1}', "--arg", "code=007")
    assert code == 0
    assert run["variables"] == {"count": 7, "ratio": 2.5, "flag": True, "tags": ["a", "b"], "meta": {"k": 1},
                                "code": "007", "region": "eu"}
    assert run["steps"]["echo"]["stdout"] == "7 eu\n"


@pytest.mark.parametrize("argv", [
    [],                                       # required count missing
    ["--arg", "count=1", "--arg", "undeclared=1"],
    ["--arg", "count=many"],
    ["--arg", "count=1", "--arg", "flag=perhaps"],
    ["--arg", "count=1", "--arg", "tags=[not json"],
    ["--arg", "count"],                       # not KEY=VALUE
    ["--arg", "count=1", "--arg", "tags=" + "[" * 50000 + "]" * 50000],  # deeper than json can read
])
def test_bad_arguments_exit_2_before_anything_runs(tmp_path, argv):
    result = engine("run", write(tmp_path, "w.yaml", ARGS), "--fast", "--json", *argv)
    assert result.returncode == 2
    assert "status" not in json.loads(result.stdout)


@pytest.mark.parametrize("decide", ["gate", "=approve", "gate=maybe", "gate=retry", "gate=skip"])
def test_a_bad_decide_exits_2(tmp_path, decide):
    result = engine("run", write(tmp_path, "w.yaml", GATED), "--fast", "--json", "--decide", decide)
    assert result.returncode == 2
    assert "status" not in json.loads(result.stdout)


def test_a_decide_for_an_approval_that_is_never_requested_is_ignored(tmp_path):
    path = write(tmp_path, "w.yaml", """\
        name: skipped_gate
        steps:
          - id: gate
            approval: required
            condition: "1 == 2"
          - id: work
            agent: mock
            command: work
        """)
    code, run = engine_json("run", path, "--fast", "--decide", "gate=approve", "--decide", "work=approve")
    assert code == 0 and run["status"] == "completed"
    assert run["steps"]["gate"]["status"] == "skipped" and run["approvals"] == []


def test_a_decide_for_a_step_the_workflow_does_not_have_is_ignored_with_a_note(tmp_path):
    result = engine("run", write(tmp_path, "w.yaml", GATED), "--fast", "--json", "--decide", "gate=approve",
                    "--decide", "gaet=approve")
    assert result.returncode == 0
    assert json.loads(result.stdout)["status"] == "completed"
    assert "gaet=approve is ignored" in result.stderr


# -- library steps and sub-workflows --------------------------------------------------


def test_a_library_file_gives_defaults_that_the_workflow_fields_override(tmp_path):
    library = write(tmp_path, "library.yaml", """\
        greet:
          agent: mock
          command: say hello
          mock: {outputs: {word: from_library}}
        """)
    path = write(tmp_path, "w.yaml", """\
        name: uses_library
        steps:
          - id: plain
            library_step: greet
          - id: custom
            library_step: greet
            mock: {outputs: {word: from_workflow}}
        """)
    code, run = engine_json("run", path, "--fast", "--library", library)
    assert code == 0
    assert run["steps"]["plain"]["outputs"] == {"word": "from_library"}
    assert run["steps"]["custom"]["outputs"] == {"word": "from_workflow"}


def test_running_a_library_step_without_the_library_exits_2(tmp_path):
    path = write(tmp_path, "w.yaml", "name: x\nsteps:\n  - id: s\n    library_step: greet\n")
    assert engine("run", path, "--fast", "--json").returncode == 2


def test_a_workflow_ref_runs_the_child_beside_the_file_and_completes_with_its_outputs(tmp_path):
    write(tmp_path, "child.yaml", """\
        name: child
        args:
          who: {type: string, required: true}
        steps:
          - id: hello
            agent: shell
            command: |
              printf '{"greeting": "hi %s"}\\n' ${args.who}
        """)
    path = write(tmp_path, "parent.yaml", """\
        name: parent
        steps:
          - id: call
            workflow_ref: {name: child, args: {who: world}}
          - id: after
            agent: shell
            command: echo ${call.greeting}
            depends_on: [call]
        """)
    code, run = engine_json("run", path, "--fast")
    assert code == 0, run
    assert run["steps"]["call"]["status"] == "completed"
    assert run["steps"]["call"]["outputs"]["greeting"] == "hi world"
    assert run["steps"]["after"]["stdout"] == "hi world\n"


def test_a_missing_child_workflow_is_invalid_input(tmp_path):
    path = write(tmp_path, "parent.yaml", "name: parent\nsteps:\n  - id: call\n    workflow_ref: nowhere\n")
    code, report = engine_json("run", path, "--fast")
    assert code == 2 and report["valid"] is False


def test_a_workflow_ref_cycle_exits_2_with_code_cycle(tmp_path):
    write(tmp_path, "b.yaml", "name: b\nsteps:\n  - id: to_a\n    workflow_ref: a\n")
    path = write(tmp_path, "a.yaml", "name: a\nsteps:\n  - id: to_b\n    workflow_ref: b\n")
    code, report = engine_json("run", path, "--fast", timeout=30)
    assert code == 2 and [p["code"] for p in report["problems"]] == ["cycle"]
    assert "a -> b -> a" in report["problems"][0]["message"]


WAITS_AN_HOUR = """
name: waits_an_hour
steps:
  - id: ask
    agent: mock
    command: "Question ${loop.iteration}"
    timeout: 1h
    loop: {max_iterations: 3, gate: reply}
  - id: sign_off
    approval: required
    timeout: 1h
"""


def test_in_real_time_a_run_that_only_a_person_can_go_on_with_ends_paused_at_once(tmp_path):
    """Spec 12: no answer given -> paused; the requests' expiry an hour away is no reason to wait (only --fast
    moves the clock to it)."""
    path = tmp_path / "waits.yaml"
    path.write_text(WAITS_AN_HOUR)
    code, result = engine_json("run", path, timeout=120)
    assert (code, result["status"]) == (3, "paused")
    assert [(a["step"], a["kind"], a["status"]) for a in result["approvals"]] == [
        ("sign_off", "approval", "pending"), ("ask", "reply", "pending")]
    code, result = engine_json("run", path, "--fast")
    assert (code, result["status"], [a["status"] for a in result["approvals"]]) == (1, "failed", ["expired"] * 2)
