"""The built-in agents (spec section 11): the mock's plan and executor, and the shell executor."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.executors import MockExecutor, ShellExecutor, StepRequest
from engine.executors.mock import plan
from engine.executors.sandbox import SAFE_PATH, Sandbox
from engine.executors.shell import agent_environment, last_line_object
from engine.model import Step
from tests.sandboxed import marker, pids_sleeping
from tests.waiting import wait_until


def request(step=None, *, command="run it", agent="mock", call=1, attempt=1, **extra):
    spec = Step.model_validate({"id": "s", "agent": agent, "command": command, **(step or {})})
    return StepRequest(run_id="run-1", step="s", attempt=attempt, agent=agent, command=command, spec=spec,
                       call=call, **extra)


def shell(command, *, executor=None, cancel=None, **extra):
    executor = executor or ShellExecutor()
    return executor.execute(request(command=command, agent="shell", **extra), cancel or threading.Event())


# -- mock.plan -------------------------------------------------------------------


def test_the_mock_fails_while_the_call_number_is_within_fail_times():
    step = {"mock": {"fail_times": 2, "outputs": {"v": 1}}}
    results = [plan(request(step, call=call)).result for call in (1, 2, 3, 4)]
    assert [r.ok for r in results] == [False, False, True, True]
    assert results[0].error_code == "agent_error"
    assert results[2].outputs == {"v": 1}


def test_fail_times_counts_calls_not_attempts():
    step = {"mock": {"fail_times": 1}}
    assert plan(request(step, call=2, attempt=1)).result.ok
    assert not plan(request(step, call=1, attempt=3)).result.ok


def test_the_mock_failure_carries_the_configured_error_message():
    result = plan(request({"mock": {"fail_times": 1, "error": "vendor API down"}})).result
    assert not result.ok and result.error == "vendor API down"


def test_the_mock_failure_without_a_message_still_says_it_failed():
    result = plan(request({"mock": {"fail_times": 1}})).result
    assert not result.ok and result.error


def test_default_outputs_are_the_empty_value_of_each_declared_type():
    outputs = {"s": {"type": "string"}, "n": {"type": "number"}, "i": {"type": "integer"},
               "b": {"type": "boolean"}, "a": {"type": "array"}, "o": {"type": "object"}, "u": {}}
    result = plan(request({"outputs": outputs})).result
    assert result.ok
    assert result.outputs == {"s": "", "n": 0, "i": 0, "b": False, "a": [], "o": {}, "u": ""}
    assert type(result.outputs["b"]) is bool


def test_a_partial_mock_outputs_is_not_filled_in():
    step = {"outputs": {"a": {"type": "string"}, "b": {"type": "integer"}}, "mock": {"outputs": {"a": "given"}}}
    assert plan(request(step)).result.outputs == {"a": "given"}


def test_the_default_stdout_is_the_outputs_as_json():
    result = plan(request({"mock": {"outputs": {"risk": 3, "note": "café", "ok": True}}})).result
    assert json.loads(result.stdout) == {"risk": 3, "note": "café", "ok": True}
    assert "café" in result.stdout


def test_a_mock_without_outputs_prints_an_empty_json_object():
    assert plan(request()).result.stdout == "{}"


def test_a_configured_stdout_is_returned_as_is_next_to_the_outputs():
    result = plan(request({"mock": {"stdout": "VERDICT: APPROVED\n", "outputs": {"v": 1}}})).result
    assert result.stdout == "VERDICT: APPROVED\n" and result.outputs == {"v": 1}


def test_a_mock_with_timeout_true_never_returns():
    outcome = plan(request({"mock": {"timeout": True, "outputs": {"v": 1}}}))
    assert outcome.result is None


def test_the_mock_delay_is_reported_with_the_result_and_not_slept_by_plan():
    started = time.monotonic()
    outcome = plan(request({"mock": {"delay_s": 3600}}))
    assert outcome.delay_s == 3600 and outcome.result.ok
    assert time.monotonic() - started < 300


def test_tokens_and_cost_are_reported_as_usage_on_success_and_failure():
    ok = plan(request({"mock": {"tokens": 1200, "cost": 0.03}})).result
    failed = plan(request({"mock": {"tokens": 5, "cost": 0.5, "fail_times": 1}})).result
    assert (ok.tokens, ok.cost) == (1200, 0.03)
    assert (failed.tokens, failed.cost) == (5, 0.5)
    assert plan(request()).result.tokens == 0


# -- MockExecutor ----------------------------------------------------------------------


def test_the_mock_executor_returns_the_planned_result():
    result = MockExecutor().execute(request({"mock": {"outputs": {"v": 2}}}), threading.Event())
    assert result.ok and result.outputs == {"v": 2}


def test_the_mock_executor_stops_a_long_delay_when_cancelled():
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    started = time.monotonic()
    result = MockExecutor().execute(request({"mock": {"delay_s": 3600}}), cancel)
    assert time.monotonic() - started < 300
    assert not result.ok and result.error_code == "cancelled"


def test_the_mock_executor_stops_a_never_returning_mock_when_cancelled():
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    started = time.monotonic()
    result = MockExecutor().execute(request({"mock": {"timeout": True}}), cancel)
    assert time.monotonic() - started < 300
    assert not result.ok and result.error_code == "cancelled"


@pytest.mark.parametrize("mock", [{"timeout": True}, {"delay_s": 3600}])
def test_the_mock_executor_times_out_at_the_step_timeout(mock):
    started = time.monotonic()
    result = MockExecutor().execute(request({"mock": mock}, timeout_s=0.3), threading.Event())
    assert time.monotonic() - started < 300
    assert not result.ok and result.error_code == "timeout"


# -- ShellExecutor ---------------------------------------------------------------------


def test_exit_zero_succeeds_with_stdout_byte_for_byte():
    result = shell(r"printf 'line 1\n  indented\r\n\ttab\ncafé\n\nno newline at end'")
    assert result.ok and result.error is None
    assert result.stdout == "line 1\n  indented\r\n\ttab\ncafé\n\nno newline at end"


@pytest.mark.parametrize("command, outputs", [
    ("""echo working; echo '{"risk": 3, "tags": ["a"], "ok": true}'""", {"risk": 3, "tags": ["a"], "ok": True}),
    ("""echo '{"a": 1}'; echo; echo '   '""", {"a": 1}),
    ("""echo '{"a": 1}'; echo done""", {}),
    ("""echo '[1, 2]'""", {}),
    ("""echo 42""", {}),
    ("""echo '"text"'""", {}),
    ("""echo '{"a": 1'""", {}),
    ("""echo '{"a": 1}'; echo '{"b": 2}'""", {"b": 2}),
    ("true", {}),
])
def test_the_last_non_empty_stdout_line_becomes_the_outputs_only_when_it_is_a_json_object(command, outputs):
    result = shell(command)
    assert result.ok and result.outputs == outputs


@pytest.mark.parametrize("stdout, expected", [
    ('{"a": 1}\n', {"a": 1}), ('x\n{"a": 1}\n\n  \n', {"a": 1}), ("[1]\n", None), ("null", None), ("", None),
])
def test_last_line_object_reads_the_last_non_empty_line(stdout, expected):
    assert last_line_object(stdout) == expected


@pytest.mark.parametrize("last_line, why", [
    ('{"a": "\\u0000"}', "NUL character"),
    ('{"a": NaN}', "not finite"),
    ('{"a": 1, "a": 2}', "appears twice"),
    ('{"a": ' * 70 + '1' + '}' * 70, "deeper than 64 levels"),
    ('{"a": ' * 5000 + '1' + '}' * 5000, "deeper than 64 levels"),
    ('{"n": 100000000000000000000}', "64 bits"),
])
def test_a_last_line_object_no_database_could_keep_fails_the_step_with_output_invalid(tmp_path, last_line, why):
    result = shell("echo working; cat", stdin=last_line)
    assert not result.ok and result.error_code == "output_invalid"
    assert why in result.error and "stdout's last line" in result.error
    assert result.stdout.startswith("working\n")


def test_a_command_written_out_as_text_for_another_agent_never_reaches_the_shell(tmp_path):
    # The agent became a shell agent after the run rendered the command with its values as text.
    marker = tmp_path / "pwned"
    spec = Step.model_validate({"id": "s", "agent": "tool", "command": "echo ${args.name}"})
    written = StepRequest(run_id="run-1", step="s", attempt=1, agent="tool", spec=spec,
                          command=f"echo $(touch {marker})")
    result = ShellExecutor().execute(written, threading.Event())
    assert not result.ok and result.error_code == "template_error"
    assert "start a new run" in result.error
    assert not marker.exists()


def test_a_nul_byte_on_stdout_is_kept_as_a_replacement_character():
    result = shell(r"printf 'a\000b'")
    assert result.ok and result.stdout == "a\ufffdb"


def test_a_non_zero_exit_fails_with_exit_code_the_code_and_the_stderr_tail():
    result = shell("echo partial; echo 'disk is full' >&2; exit 3")
    assert not result.ok and result.error_code == "exit_code"
    assert "3" in result.error and "disk is full" in result.error
    assert result.stdout == "partial\n"


def test_only_the_tail_of_a_long_stderr_goes_into_the_message():
    result = shell("seq 1 20000 >&2; exit 1")
    assert result.error_code == "exit_code"
    assert "20000" in result.error and len(result.error) < 5000


def test_stdin_is_fed_verbatim():
    text = "first\n  second\n\n\tthird without newline é"
    result = shell("cat", stdin=text)
    assert result.ok and result.stdout == text


def test_a_large_stdin_the_command_ignores_does_not_hang():
    result = shell("echo ignored", stdin="x" * 5_000_000, timeout_s=300)  # a hang would time out
    assert result.ok and result.stdout == "ignored\n"


def test_the_command_runs_in_the_given_working_directory(tmp_path):
    result = shell("pwd; echo made > here.txt", workdir=str(tmp_path))
    assert result.ok
    assert os.path.realpath(result.stdout.splitlines()[0]) == os.path.realpath(tmp_path)
    assert (tmp_path / "here.txt").read_text() == "made\n"


def test_the_environment_names_the_run_and_the_step():
    result = shell('echo "$FORGE_RUN_ID/$FORGE_STEP_ID"')
    assert result.stdout == "run-1/s\n"


def environment_of(result) -> dict:
    return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


def test_the_command_sees_none_of_the_workers_variables(monkeypatch, tmp_path):
    for name in ("FORGE_SECRET_KEY", "DATABASE_URL", "OPENAI_API_KEY", "FORGE_AGENT_SECRET_DEPLOY", "LD_PRELOAD_X"):
        monkeypatch.setenv(name, "worker-only-value")
    result = shell("env", workdir=str(tmp_path))
    seen = environment_of(result)
    assert "worker-only-value" not in result.stdout
    assert set(seen) - {"PWD", "SHLVL", "_", "OLDPWD"} == {"PATH", "HOME", "LANG", "TZ", "FORGE_RUN_ID",
                                                          "FORGE_STEP_ID", "FORGE_ATTEMPT"}
    assert (seen["PATH"], seen["HOME"], seen["LANG"], seen["TZ"]) == (SAFE_PATH, str(tmp_path), "C.UTF-8", "UTC")


def test_the_value_variables_and_the_agents_variables_are_added_and_cannot_replace_forges():
    executor = ShellExecutor(env={"GREETING": "hi", "PATH": "/evil", "HOME": "/evil", "FORGE_RUN_ID": "evil",
                                  "FORGE_AGENT_SECRET_X": "listed"})
    result = shell("env", executor=executor, env={"FORGE_V1": "value", "PATH": "/evil", "OTHER": "evil"})
    seen = environment_of(result)
    # the secret is there, and shown as [secret] wherever the command prints it
    assert (seen["GREETING"], seen["FORGE_AGENT_SECRET_X"], seen["FORGE_V1"]) == ("hi", "[secret]", "value")
    assert "evil" not in result.stdout and "OTHER" not in seen


PROC_READER = """
import ctypes, sys, threading
from engine.executors import ShellExecutor, StepRequest
from engine.model import Step
command = 'tr "\\\\0" "\\\\n" < /proc/$PPID/environ'
spec = Step.model_validate({"id": "s", "agent": "shell", "command": command})
result = ShellExecutor().execute(StepRequest(run_id="r", step="s", attempt=1, agent="shell", command=command,
                                             spec=spec), threading.Event())
print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE
print(result.stdout)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")
def test_a_step_cannot_read_the_workers_environment_through_proc(tmp_path):
    env = {**os.environ, "FORGE_SECRET_KEY": "worker-only-secret-value"}
    done = subprocess.run([sys.executable, "-c", PROC_READER], cwd=Path(__file__).resolve().parents[2], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    dumpable, _, stdout = done.stdout.partition("\n")
    assert dumpable == "0"  # /proc/<worker>/environ and its memory now belong to root, not to the step's user
    if os.geteuid() != 0:  # root reads any process's files whatever the flag says
        assert "worker-only-secret-value" not in stdout


def test_an_agents_listed_secrets_come_from_the_worker_and_an_absent_one_is_left_out():
    config = {"env": {"A": "1"}, "secret_env": ["FORGE_AGENT_SECRET_SET", "FORGE_AGENT_SECRET_UNSET"]}
    assert agent_environment(config, {"FORGE_AGENT_SECRET_SET": "s", "FORGE_SECRET_KEY": "k"}) == {
        "A": "1", "FORGE_AGENT_SECRET_SET": "s"}


def test_every_problem_of_an_agents_environment_is_named_at_once():
    with pytest.raises(ValueError) as caught:
        agent_environment({"env": {"PATH": "/x", "ok": "1", "1bad": "x"}, "secret_env": ["DATABASE_URL"]}, {})
    message = str(caught.value)
    assert "PATH is set by Forge" in message and "'1bad' is not a variable name" in message
    assert "'DATABASE_URL' is not an agent secret" in message


def run_until_its_sleeps_start(seconds, *, cancel=None, timeout_s=600):
    """Runs a command whose shell and background child sleep for `seconds`; returns (its result, their pids
    seen from outside the sandbox while it ran). `cancel` is set once both sleep."""
    done, seen = [], []
    thread = threading.Thread(target=lambda: done.append(shell(f"sleep {seconds} & sleep {seconds}; wait",
                                                               cancel=cancel, timeout_s=timeout_s)))
    thread.start()
    assert wait_until(lambda: len(pids_sleeping(seconds)) == 2 or done), "the command's sleeps never started"
    seen = pids_sleeping(seconds)
    if cancel is not None:
        cancel.set()
    thread.join(timeout=300)
    return done[0], seen


def test_a_timeout_kills_the_whole_process_group():
    seconds = marker()
    result, seen = run_until_its_sleeps_start(seconds, timeout_s=3)
    assert not result.ok and result.error_code == "timeout"
    assert len(seen) == 2 and wait_until(lambda: not pids_sleeping(seconds))


def test_cancel_kills_the_running_command_and_its_children():
    seconds = marker()
    result, seen = run_until_its_sleeps_start(seconds, cancel=threading.Event())
    assert not result.ok and result.error_code == "cancelled"
    assert len(seen) == 2 and wait_until(lambda: not pids_sleeping(seconds))


def test_output_over_the_bound_is_truncated_with_a_note():
    result = shell("head -c 5000000 /dev/zero | tr '\\0' y", executor=ShellExecutor(sandbox=Sandbox().for_agent({"limits": {"output_kb": 1}})))
    assert result.ok
    assert result.stdout.startswith("y" * 1024)
    assert "truncated" in result.stdout and len(result.stdout) < 1300


def test_endless_output_under_a_small_bound_ends_at_the_timeout_without_hanging():
    result = shell("yes", executor=ShellExecutor(sandbox=Sandbox().for_agent({"limits": {"output_kb": 1}})), timeout_s=1)
    assert result.error_code == "timeout"
    assert len(result.stdout) < 1300


def test_a_command_producing_ten_megabytes_completes():
    result = shell("head -c 10485760 /dev/zero | tr '\\0' x; echo", timeout_s=300)  # a hang would time out
    assert result.ok and result.stdout.startswith("x" * 1000)


def test_a_command_flooding_stderr_does_not_block():
    result = shell("head -c 2000000 /dev/zero >&2; echo done", timeout_s=300)
    assert result.ok and result.stdout == "done\n"


def test_a_watcher_hears_the_output_while_the_command_runs(tmp_path):
    heard = []
    executor = ShellExecutor(watch=lambda out, err: heard.append((out, err)))
    gate = tmp_path / "open"
    worker = threading.Thread(target=lambda: heard.append(shell(
        "echo first; echo 'warming up' >&2; while [ ! -e open ]; do sleep 0.05; done; echo second",
        executor=executor, timeout_s=300, workdir=str(tmp_path))))
    worker.start()
    assert wait_until(lambda: ("first\n", "warming up\n") in heard), "the output so far, before the end"
    gate.touch()  # only now may the command finish
    worker.join(timeout=60)
    result = heard[-1]
    assert result.ok and result.stdout == "first\nsecond\n"
    assert heard[-2] == ("first\nsecond\n", "warming up\n")  # and once more at its end


def test_an_agent_s_secret_never_leaves_in_what_the_command_printed():
    heard = []
    secret = "s3cr3t-value-xyz"
    executor = ShellExecutor(env={"FORGE_AGENT_SECRET_TOKEN": secret}, watch=lambda out, err: heard.append(out + err))
    result = shell('[ "$FORGE_AGENT_SECRET_TOKEN" = s3cr3t-value-xyz ] && echo it is there; '
                   'echo "token=$FORGE_AGENT_SECRET_TOKEN"; echo "$FORGE_AGENT_SECRET_TOKEN" >&2; exit 1',
                   executor=executor)
    assert secret not in result.stdout + result.error + "".join(heard)
    assert result.stdout == "it is there\ntoken=[secret]\n" and "[secret]" in result.error
