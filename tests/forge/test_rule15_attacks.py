"""Spec 15 read by an attacker: what a workflow's author or a person with fewer rights tries past the checks."""

from __future__ import annotations

import json

import pytest

from forge.governance import services as services_gateways
from forge.governance.models import Agent, Gateway, TokenEvent
from forge.runs import artifacts, services
from forge.runs.models import Approval, Artifact, Run, RunEvent
from tests.forge.api.test_agent_settings_and_telemetry import sent_by_step
from tests.forge.api.test_gateway_sync_and_openai import KEY, chat_completion
from tests.forge.conftest import steps_of
from tests.forge.api.conftest import local_server  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

LATE = """
name: late_agent
steps:
  - {id: ask, approval: required, approval_message: "go on?"}
  - id: draft
    agent: late
    command: "draft it"
    timeout: 30
    depends_on: [ask]
    agent_config: {model: gpt-4.1, temperature: 1.5, max_tokens: 900000}
"""


def test_an_agent_created_after_the_run_started_cannot_take_a_step_overlay_it_never_allowed(
        operator, approver, save_workflow, local_server, monkeypatch, django_capture_on_commit_callbacks):
    """The agent did not exist when the run started, so nothing was pinned and the overlay was never checked; once
    an admin creates it (allowing no override, max_tokens 1000), the step must not reach it with model, temperature
    and 900,000 max_tokens of its own choosing."""
    local_server.reply = lambda seen: (200, chat_completion("done"))
    monkeypatch.setenv("FORGE_AGENT_SECRET_TEST_OPENAI_KEY", KEY)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(user=operator, version=save_workflow(LATE))
    Agent.objects.create(name="late", provider="openai", overridable=[],
                         config={"model": "gpt-4o-mini", "base_url": f"{local_server.url}/v1",
                                 "api_key_env": "FORGE_AGENT_SECRET_TEST_OPENAI_KEY", "max_tokens": 1000})

    with django_capture_on_commit_callbacks(execute=True):
        services.approval_decide(user=approver, decision="approve",
                                 approval=Approval.objects.get(run=run, step="ask", status=Approval.PENDING))

    assert "draft" not in sent_by_step(local_server)  # nothing reached the model API
    draft = steps_of(run)["draft"]
    assert (draft.status, draft.error_code) == ("failed", "agent_config_refused")
    assert "sets agent_config.model, which agent 'late' does not let a step override (it allows none)" in draft.error
    assert Run.objects.get(pk=run.pk).status == "failed"


CALLED_BACK = """
name: called_back
steps:
  - {id: remote, agent: two-gateways, command: "summarise", timeout: 60}
"""


def test_a_gateway_the_attempt_was_not_sent_to_cannot_report_its_result(
        operator, admin_user, save_workflow, local_server, client, django_capture_on_commit_callbacks):
    """The agent routes through gw-first then gw-second; gw-first took the attempt (202). gw-second, which never
    saw it, must not be able to report it (its result, tokens and cost) in gw-first's place."""
    first = Gateway(name="gw-first", url=f"{local_server.url}/dispatch")
    first.set_token()
    first.save()
    second = Gateway(name="gw-second", url=f"{local_server.url}/dispatch-second")
    second_token = second.set_token()
    second.save()
    agent = Agent.objects.create(name="two-gateways", provider="http", config={})
    services_gateways.agent_gateways_set(user=admin_user, agent=agent, gateways=[first, second])
    local_server.reply = lambda seen: (202, {"accepted": True})
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(user=operator, version=save_workflow(CALLED_BACK))
    assert [seen.path for seen in local_server.seen] == ["/dispatch"]

    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/api/v1/steps/complete", json.dumps(
            {"run_id": run.pk, "step": "remote", "attempt": 1, "iteration": 0, "ok": True, "stdout": "forged",
             "tokens": 10**12, "cost": 999_999.0}), content_type="application/json", HTTP_X_GATEWAY_TOKEN=second_token)

    assert answer.status_code == 403, answer.content
    assert steps_of(run)["remote"].status == "running"
    assert not TokenEvent.objects.filter(run_id=run.pk).exists()


MANY_EMPTY = """
name: many_empty
steps:
  - id: spray
    agent: shell
    command: |
      mkdir -p e
      echo x >> n.txt
      n=$(wc -l < n.txt)
      for i in 1 2 3 4; do : > "e/$n-$i"; done
      echo "$n"
    artifacts: ["e/*"]
    loop: {max_iterations: 3, until: "output.contains('3')"}
"""


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_run_keeps_a_bounded_number_of_files_however_many_empty_ones_its_steps_leave(
        operator, save_workflow, settings, tmp_path, monkeypatch):
    """Empty files cost nothing against the byte bounds: each collection kept 1,000 rows, times every attempt and
    loop iteration (up to 101 x 1,000 of them)."""
    settings.FORGE_WORKDIR = tmp_path / "work"
    settings.FORGE_ARTIFACTS_DIR = tmp_path / "artifacts"
    monkeypatch.setattr(artifacts, "RUN_FILES", 6)

    run = services.run_start(user=operator, version=save_workflow(MANY_EMPTY))

    run.refresh_from_db()
    assert run.status == "completed", steps_of(run)["spray"].error
    assert Artifact.objects.filter(run=run).count() == 6
    said = [e.data["reason"] for e in RunEvent.objects.filter(run=run, kind="artifact_refused")]
    # The directory is shared: iteration 2 matches 8 files (2 kept), iteration 3 matches 12 (none kept).
    assert said == ["6 more files matched, over the run's bound of 6 files kept",
                    "12 more files matched, over the run's bound of 6 files kept"]
