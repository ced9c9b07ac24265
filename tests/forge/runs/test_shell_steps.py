"""Shell steps through the console's runtime (issue 9, findings 1 and 2): values stay data, and the step's
environment holds nothing of the worker's but its PATH.

Transactional database: runs advance on commit, and their shell steps run
in the worker (django-q2 sync), as in the cluster.
"""

from __future__ import annotations

import json
import os

import pytest
from django.core.exceptions import ValidationError

from forge.governance.models import Agent
from forge.runs import services
from forge.runtime.execution import workdir
from forge.runs.models import RunEvent
from forge.workflows.services import WorkflowRejected
from tests.forge.conftest import steps_of

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

HOSTILE = """
name: hostile_values
args:
  name: {{type: string, required: true}}
steps:
  - id: reply
    agent: mock
    command: answer the question
    mock: {{outputs: {{text: {reply}}}}}
  - id: greet
    agent: {agent}
    command: |
      printf '%s|' "hello ${{args.name}}" 'quoted {{{{ args.name }}}}' ${{reply.text}} "$(printf '%s' ${{reply.text}})"
      cat <<EOF
      ${{reply.text}}
      EOF
    depends_on: [reply]
"""


def hostile(marker) -> str:
    return f"$(touch {marker}) `touch {marker}`; touch {marker} \"' \n touch {marker}"


@pytest.mark.parametrize("agent", ["shell", "box"])
def test_a_hostile_run_argument_and_upstream_output_do_not_execute(operator, save_workflow, tmp_path, agent):
    Agent.objects.create(name="box", provider="shell")  # a shell agent with a name of its own
    marker = tmp_path / "pwned"
    value = hostile(marker)
    source = HOSTILE.format(reply=json.dumps(value), agent=agent)

    run = services.run_start(user=operator, version=save_workflow(source), args={"name": value})

    run.refresh_from_db()
    greet = steps_of(run)["greet"]
    assert not marker.exists(), "a value ran as shell code"
    assert run.status == "completed", (greet.error_code, greet.error)
    assert greet.stdout == f"hello {value}|quoted {value}|{value}|{value}|{value}\n"


# -- the environment ---------------------------------------------------------------------------------------

# FORGE_SECRET_KEY is set for the test run by tests/settings.py; the others stand for a worker's own.
SERVER_SECRETS = {"DATABASE_URL": "postgres://forge:db-password-123@db/forge", "OPENAI_API_KEY": "sk-server-456",
                  "FORGE_AGENT_SECRET_UNLISTED": "unlisted-secret-789"}

ENV_WORKFLOW = """
name: show_env
steps:
  - id: show
    agent: deployer
    command: env; printf 'home=%s\\n' "$HOME"
"""


def variables(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line and not line.startswith("home="))


def test_a_shell_step_sees_only_its_own_variables_and_what_its_agent_lists(operator, save_workflow, monkeypatch):
    for name, value in SERVER_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FORGE_AGENT_SECRET_DEPLOY", "deploy-token-abc")
    Agent.objects.create(name="deployer", provider="shell",
                         config={"env": {"GREETING": "hello there"}, "secret_env": ["FORGE_AGENT_SECRET_DEPLOY"]})

    run = services.run_start(user=operator, version=save_workflow(ENV_WORKFLOW))

    run.refresh_from_db()
    show = steps_of(run)["show"]
    assert run.status == "completed", show.error
    seen = variables(show.stdout)
    assert set(seen) - {"PWD", "SHLVL", "_", "OLDPWD"} == {
        "PATH", "HOME", "LANG", "TZ", "FORGE_RUN_ID", "FORGE_STEP_ID", "FORGE_ATTEMPT", "GREETING",
        "FORGE_AGENT_SECRET_DEPLOY"}
    # the secret reaches the command, and is shown as [secret] where the command prints it
    assert (seen["GREETING"], seen["FORGE_AGENT_SECRET_DEPLOY"]) == ("hello there", "[secret]")
    assert "deploy-token-abc" not in show.stdout
    assert (seen["FORGE_RUN_ID"], seen["FORGE_STEP_ID"], seen["LANG"], seen["TZ"]) == (str(run.pk), "show",
                                                                                       "C.UTF-8", "UTC")
    assert seen["HOME"] == workdir(run.pk) and f"home={workdir(run.pk)}" in show.stdout
    stored = show.stdout + json.dumps(list(RunEvent.objects.filter(run=run).values_list("data", flat=True)))
    for name in ("FORGE_SECRET_KEY", *SERVER_SECRETS):
        assert name not in seen
        assert os.environ[name] not in stored


@pytest.mark.parametrize(("config", "problem"), [
    ({"env": {"PATH": "/tmp/evil"}}, "PATH is set by Forge"),
    ({"env": {"FORGE_RUN_ID": "other"}}, "FORGE_RUN_ID is set by Forge"),
    ({"env": {"HOME": "/root"}}, "HOME is set by Forge"),
    ({"secret_env": ["FORGE_SECRET_KEY"]}, "is not an agent secret"),
    ({"secret_env": ["DATABASE_URL"]}, "is not an agent secret"),
    ({"env": {"bad name": "x"}}, "is not a variable name"),
    ({"env": {"N": 5}}, "must be text"),
    ({"env": ["A=1"]}, "env must be a mapping"),
])
def test_a_misconfigured_shell_agent_fails_its_step_with_the_reason_and_runs_nothing(operator, save_workflow,
                                                                                   tmp_path, config, problem):
    marker = tmp_path / "ran"
    Agent.objects.create(name="deployer", provider="shell", config=config)  # saved without validation
    source = f"name: misconfigured\nsteps:\n  - id: show\n    agent: deployer\n    command: touch {marker}\n"

    run = services.run_start(user=operator, version=save_workflow(source))

    run.refresh_from_db()
    show = steps_of(run)["show"]
    assert (run.status, show.status) == ("failed", "failed")
    assert "deployer" in show.error and problem in show.error
    assert not marker.exists()


@pytest.mark.parametrize(("config", "problem"), [
    ({"env": {"PATH": "/tmp/evil"}}, "PATH is set by Forge"),
    ({"env": {"FORGE_V1": "x"}}, "FORGE_V1 is set by Forge"),
    ({"secret_env": ["FORGE_SECRET_KEY"]}, "secret_env: 'FORGE_SECRET_KEY' is not an agent secret"),
    ({"secret_env": "FORGE_AGENT_SECRET_X"}, "secret_env must be a list"),
])
def test_a_shell_agents_bad_environment_is_refused_on_save(config, problem):
    agent = Agent(name="deployer", provider="shell", config=config)
    with pytest.raises(ValidationError) as caught:
        agent.full_clean()
    assert any(problem in message for message in caught.value.message_dict["config"])


def test_a_shell_agents_listed_environment_is_accepted_on_save():
    Agent(name="deployer", provider="shell",
          config={"env": {"GREETING": "hi", "LANG": "en_GB.UTF-8"},
                  "secret_env": ["FORGE_AGENT_SECRET_DEPLOY"]}).full_clean()


# -- saving a workflow ---------------------------------------------------------------------------------------

NESTED = """
name: nested
args:
  who: {{type: string}}
steps:
  - id: greet
    agent: {agent}
    command: sh -c "echo hello ${{args.who}}"
"""


def test_saving_refuses_a_value_a_nested_shell_would_parse_naming_the_safe_way(operator, save_workflow):
    Agent.objects.create(name="box", provider="shell")
    with pytest.raises(WorkflowRejected) as caught:
        save_workflow(NESTED.format(agent="box"), operator)
    [problem] = caught.value.problems
    assert (problem.code, problem.step) == ("expression_error", "greet")
    assert "sh -c 'echo \"$1\"' _ \"${args.who}\"" in problem.message


def test_the_same_command_for_an_agent_that_is_no_shell_is_text_and_is_saved(operator, save_workflow):
    assert save_workflow(NESTED.format(agent="mock"), operator).number == 1


# -- what a command prints is hostile input ----------------------------------------------------------------

UNKEEPABLE = r"""
name: unkeepable
steps:
  - id: talk
    agent: shell
    command: |
      printf 'a\000b\n{"note": "\\u0000"}\n'
"""


def test_output_no_database_could_keep_fails_the_step_and_stores_what_can_be_kept(operator, save_workflow):
    run = services.run_start(user=operator, version=save_workflow(UNKEEPABLE))

    run.refresh_from_db()
    talk = steps_of(run)["talk"]
    assert (run.status, talk.status, talk.error_code) == ("failed", "failed", "output_invalid")
    assert "stdout's last line" in talk.error and "NUL" in talk.error
    assert talk.stdout.startswith("a\ufffdb\n")


TURNED = """
name: turned
args:
  name: {type: string, required: true}
steps:
  - id: sign_off
    approval: required
  - id: greet
    agent: tool
    command: echo ${args.name}
    depends_on: [sign_off]
"""


def test_an_agent_that_became_a_shell_mid_run_stays_what_the_run_pinned_and_its_value_never_runs(
        operator, approver, save_workflow, tmp_path):
    # Agents are pinned when the run starts (spec 15): the run that started with a mock `tool` keeps it; its
    # command, written out as text for a mock, never reaches a shell.
    Agent.objects.create(name="tool", provider="mock")
    marker = tmp_path / "pwned"
    run = services.run_start(user=operator, version=save_workflow(TURNED), args={"name": f"$(touch {marker})"})
    tool = Agent.objects.get(name="tool")
    tool.provider = "shell"
    tool.save()  # while the run waits for its approval

    services.approval_decide(user=approver, approval=run.approvals.get(step="sign_off"), decision="approve")

    run.refresh_from_db()
    greet = steps_of(run)["greet"]
    assert not marker.exists(), "a value ran as shell code"
    assert (run.status, greet.status) == ("completed", "completed")
    assert run.pinned["agents"]["tool"]["provider"] == "mock"
