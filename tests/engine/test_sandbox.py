"""Shell steps run in a sandbox (spec section 6; engine/executors/sandbox.py): a hostile step, run by the local
runner, reaches neither the data folder, nor other runs, nor the worker, nor local services, and cannot exhaust
the machine; the same step without the sandbox does each of these, so each test can fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from engine.executors.sandbox import Sandbox, limits_problems, sandbox_from_environ
from engine.runner import LocalRunner
from engine.validation import load_workflow
from tests.attacks import attacks, lay_out
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
ATTACKS = list(attacks(Path("/x"), 1))
# Without the sandbox, these reach a service this machine kind runs, or need a worker that may read /proc.
CONTROL_NEEDS = {"worker_environ": os.geteuid() == 0}


def run_step(command: str, workdir: Path, sandbox: Sandbox) -> dict:
    workflow = load_workflow(textwrap.dedent(f"""
        name: attack
        steps:
          - id: attack
            agent: shell
            timeout: 120
            command: {json.dumps(command)}
        """).encode())
    outcome = LocalRunner(workflow, workdir=str(workdir), sandbox=sandbox).run()
    return outcome.state.steps["attack"]


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_hostile_step_is_stopped_by_the_sandbox_and_works_without_it(tmp_path, attack):
    workdir = lay_out(tmp_path)
    command = attacks(tmp_path, os.getpid())[attack]

    stopped = run_step(command, workdir, Sandbox())
    assert (stopped.status, stopped.error_code) == ("failed", "exit_code"), (stopped.status, stopped.error)
    assert not (tmp_path / "planted").exists() and not Path("/usr/local/planted").exists()

    control = run_step(command, workdir, Sandbox(enabled=False))
    try:
        if CONTROL_NEEDS.get(attack, True):
            assert control.status == "completed", (attack, control.error)
    finally:
        for planted in (tmp_path / "planted", Path("/usr/local/planted")):
            planted.unlink(missing_ok=True)


def test_the_run_directory_is_the_place_a_step_writes_and_the_next_step_reads(tmp_path):
    workdir = lay_out(tmp_path)
    wrote = run_step("echo kept > made.txt && mkdir -p sub && echo deep > sub/f && echo '{\"ok\": true}'",
                     workdir, Sandbox())
    assert wrote.status == "completed"
    assert (workdir / "made.txt").read_text() == "kept\n" and (workdir / "sub" / "f").read_text() == "deep\n"
    read = run_step("cat made.txt sub/f", workdir, Sandbox())
    assert read.status == "completed"


def test_network_is_there_only_when_the_agent_says_so(tmp_path):
    workdir = lay_out(tmp_path)
    reach = attacks(tmp_path, 1)["redis_tcp"]
    assert run_step(reach, workdir, Sandbox()).status == "failed"
    assert run_step(reach, workdir, Sandbox().for_agent({"network": True})).status == "completed"


def test_the_agents_limits_apply(tmp_path):
    workdir = lay_out(tmp_path)
    few = Sandbox().for_agent({"limits": {"processes": 16}})
    forks = "python3 -c 'import os\nfor i in range(40):\n  os.fork() or os._exit(0)'"
    assert run_step(forks, workdir, few).status == "failed"
    assert run_step(forks, workdir, Sandbox()).status == "completed"
    big_file = "head -c 3000000 /dev/zero > big"
    assert run_step(big_file, workdir, Sandbox().for_agent({"limits": {"file_mb": 2}})).status == "failed"
    assert run_step(big_file, workdir, Sandbox()).status == "completed"


@pytest.mark.parametrize("config, problem", [
    ({"network": "yes"}, "network: true or false"),
    ({"network": 1}, "network: true or false"),
    ({"limits": []}, "limits: a mapping"),
    ({"limits": {"memory_mb": 10}}, "limits.memory_mb: a whole number from 64"),
    ({"limits": {"processes": 10**9}}, "limits.processes: a whole number"),
    ({"limits": {"cpu_seconds": 1.5}}, "limits.cpu_seconds"),
    ({"limits": {"cpu_seconds": True}}, "limits.cpu_seconds"),
    ({"limits": {"swap": 1}}, "'swap' is not a limit"),
])
def test_an_agents_sandbox_settings_are_refused_with_a_reason(config, problem):
    problems = limits_problems(config)
    assert any(problem in found for found in problems), problems
    with pytest.raises(ValueError):
        Sandbox().for_agent(config)


@pytest.mark.parametrize("config", [{}, {"network": False}, {"network": True},
                                    {"limits": {"memory_mb": 64, "processes": 16_384, "output_kb": 1}}])
def test_valid_sandbox_settings_are_kept(config):
    assert limits_problems(config) == []
    assert Sandbox().for_agent(config).network is config.get("network", False)


@pytest.mark.parametrize("environ, enabled", [({}, True), ({"FORGE_SHELL_SANDBOX": "on"}, True),
                                              ({"FORGE_SHELL_SANDBOX": " OFF "}, False)])
def test_the_switch_is_read_from_the_environment(environ, enabled):
    assert sandbox_from_environ(environ).enabled is enabled


@pytest.mark.parametrize("raw, uids", [("", range(200_000, 265_536)), ("5000-5000", range(5000, 5001)),
                                       (" 1000-2147483646 ", range(1000, 2**31 - 1))])
def test_the_runs_user_ids_are_read_from_the_environment(raw, uids):
    environ = {"FORGE_SHELL_UIDS": raw} if raw else {}
    assert sandbox_from_environ(environ).uids == uids


HOG = ("python3 -c 'import os,time\nkids=0\ntry:\n  while kids<40:\n    if os.fork()==0:\n"
       "      while not os.path.exists(\"go\"): time.sleep(0.05)\n      os._exit(0)\n    kids+=1\n"
       "except OSError: pass\nopen(\"held\",\"w\").close()\n"
       "while not os.path.exists(\"go\"): time.sleep(0.05)'")


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root worker runs steps as a run's own user")
def test_each_run_has_a_user_of_its_own_so_one_runs_fork_bomb_leaves_another_room(tmp_path):
    """A run that holds all the processes its limit allows does not stop another run's step from starting."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    few = Sandbox().for_agent({"limits": {"processes": 16}})
    assert few.uid_of(str(tmp_path / "a")) != few.uid_of(str(tmp_path / "b"))
    done = []
    hogging = threading.Thread(target=lambda: done.append(run_step(HOG, tmp_path / "a", few)))
    hogging.start()
    try:
        assert wait_until(lambda: (tmp_path / "a" / "held").exists() or done), "the hog never filled its limit"
        other = run_step("echo '{\"ok\": true}'", tmp_path / "b", few)
        assert other.status == "completed", other.error
    finally:
        (tmp_path / "a" / "go").touch()
        hogging.join(timeout=120)
    assert done and done[0].status == "completed"


@pytest.mark.parametrize("environ", [{"FORGE_SHELL_SANDBOX": "no"}, {"FORGE_SHELL_UIDS": "0-100"},
                                     {"FORGE_SHELL_UIDS": "-1"}, {"FORGE_SHELL_UIDS": "²-³"},
                                     {"FORGE_SHELL_UIDS": "9" * 5000}, {"FORGE_SHELL_UIDS": "nobody"},
                                     {"FORGE_SHELL_UIDS": "300000-200000"}, {"FORGE_SHELL_UIDS": "200000"}])
def test_a_bad_switch_or_id_is_refused(environ):
    with pytest.raises(ValueError):
        sandbox_from_environ(environ)


def test_without_bubblewrap_a_shell_step_fails_with_sandbox_unavailable(tmp_path, monkeypatch):
    workdir = lay_out(tmp_path)
    monkeypatch.setattr("engine.executors.sandbox.SAFE_PATH", str(tmp_path / "empty"))
    monkeypatch.setattr("engine.executors.sandbox._WORKED", set())
    step = run_step("echo hi", workdir, Sandbox())
    assert (step.status, step.error_code) == ("failed", "sandbox_unavailable")
    # Read by an operator on the run page: who can act, no setting's name.
    assert "bwrap" in step.error and "until its operator fixes the sandbox" in step.error
    assert "FORGE_" not in step.error


def test_the_local_runner_runs_shell_steps_in_the_sandbox_and_says_how_to_open_the_network(tmp_path):
    flow = tmp_path / "flow.yaml"
    flow.write_text("name: f\nsteps:\n  - {id: a, agent: shell, command: \"ls /; "
                    + attacks(tmp_path, 1)["redis_tcp"].replace('"', '\\"') + "\"}\n")
    closed = subprocess.run([sys.executable, "-m", "engine", "run", str(flow), "--json"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert closed.returncode == 1 and '"exit_code"' in closed.stdout
    opened = subprocess.run([sys.executable, "-m", "engine", "run", str(flow), "--json", "--shell-network"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert opened.returncode == 0, opened.stdout
    assert "root\n" not in opened.stdout and "home" not in opened.stdout  # the host's / is not the step's


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root worker gives the run's directory to the step's user")
def test_a_directory_that_already_holds_someone_elses_files_is_never_given_to_the_steps_user(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "settings.py").write_text("SECRET = 1")
    step = run_step("echo hi", project, Sandbox())
    assert (step.status, step.error_code) == ("failed", "sandbox_unavailable")
    assert project.stat().st_uid == 0 and oct(project.stat().st_mode)[-3:] != "700"
