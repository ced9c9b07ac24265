"""An argument that reads as a secret is shown redacted on the run's header and in the audit trail; a loop step's
calls (command as rendered, a shell step's values, stdout), its "Given" and its reply request's card must not
show it either (spec section 9's calls are shown to everyone who may see the run)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from forge.runs.reads.secret_args import hider
from forge.runs import services
from forge.runs.models import Approval
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db
TOKEN = "tok-4242-hidden"
ASKS = """
name: asks_with_a_token
args:
  api_token: {type: string}
  region: {type: string, default: eu-west}
steps:
  - id: ask
    agent: AGENT
    command: "printf 'called with %s in %s' ${args.api_token} ${args.region}"
    approval_message: "Token ${args.api_token}: go on?"
    loop: {max_iterations: 2, gate: reply}
"""


@pytest.mark.parametrize("agent", ["shell", "mock"])
def test_a_secret_argument_is_redacted_in_the_calls_the_given_and_the_reply_card(
        client, save_workflow, operator, approver, agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # a shell call runs in the worker, on commit
        run = services.run_start(user=operator, version=save_workflow(ASKS.replace("AGENT", agent)),
                                 args={"api_token": TOKEN})
    run = fast_forward(run)
    request = Approval.objects.get(run=run, status=Approval.PENDING)
    if agent == "shell":
        assert TOKEN in request.output  # the step really printed it
    client.force_login(approver)
    panel = client.get(reverse("console:step", args=[run.pk, "ask"])).content.decode()
    inbox = client.get(reverse("console:approvals")).content.decode()
    assert TOKEN not in panel and TOKEN not in inbox
    calls = panel.split('<li class="call')[1]
    assert "[redacted]" in calls and "eu-west" in calls  # the other argument is shown as it is
    assert "Token [redacted]: go on?" in inbox


def test_the_hider_redacts_what_the_run_header_redacts_and_nothing_else():
    hide = hider({"api_token": "tok-4242-hidden", "source": "https://bob:hunter2@example.com/rows",
                  "keys": {"password": "pw-9999"}, "token_count": 3, "region": "eu", "pass": "no"})
    assert hide("a tok-4242-hidden b https://bob:hunter2@example.com/rows c pw-9999 d 3 eu no") == (
        "a [redacted] b [redacted] c [redacted] d 3 eu no")
    assert hide({"env": {"FORGE_V1": "tok-4242-hidden"}, "n": 1}) == {"env": {"FORGE_V1": "[redacted]"}, "n": 1}
    assert hider(None)("tok-4242-hidden") == "tok-4242-hidden"



def test_a_secret_argument_a_step_printed_is_redacted_in_the_run_log_and_its_download(
        client, save_workflow, operator, approver, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(user=operator, version=save_workflow(ASKS.replace("AGENT", "shell")),
                                 args={"api_token": TOKEN})
    run = fast_forward(run)
    client.force_login(approver)
    entries = client.get(reverse("console:run_log", args=[run.pk])).json()["entries"]
    printed = [e["text"] for e in entries if e["kind"] == "stdout"]
    assert printed == ["called with [redacted] in eu-west"]
    download = client.get(reverse("console:run_log", args=[run.pk]), {"format": "text"}).content.decode()
    assert "called with [redacted] in eu-west" in download and TOKEN not in download
