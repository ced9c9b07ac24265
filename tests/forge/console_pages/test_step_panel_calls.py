"""The step panel says, for each attempt, which gateway took it and why (every contact with a gateway, failed
ones marked), the model that answered with its input, output and total tokens and its cost; what the step used
of its agent as the run pinned it, with the step's agent_config; and the files its `artifacts` kept (size,
digest, attempt, a download link) and the matches refused. A run recorded before any of these still opens."""

import re
from html import unescape

import pytest
from django.urls import reverse

from forge.runs.reads.step_artifacts import size_text
from forge.governance.models import Agent
from forge.runs import services
from forge.runs.models import Artifact, Run, RunEvent
from tests.forge.conftest import fast_forward
from tests.forge.runtime.test_gateway_routing import gateways, register, start  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db

TWO_TRIES = """
name: two_tries
steps:
  - {id: draft, agent: mock, command: draft, agent_config: {model: big-model, temperature: 0.2},
     mock: {outputs: {ok: true}}}
"""
PLAIN = """
name: plain_flow
steps:
  - {id: draft, agent: mock, command: draft, mock: {outputs: {ok: true}}}
"""
DIGEST = "ab12cd34ef56" + "0" * 52


def text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def panel(client, run, step="draft") -> str:
    response = client.get(reverse("console:step", args=[run.pk, step]))
    assert response.status_code == 200
    return response.content.decode()


def event(run, kind, data, step="draft"):
    RunEvent.objects.create(run=run, kind=kind, step=step, data=data)


def finished(run, attempt, **fields):
    event(run, "input", {"type": "StepFinished", "step": "draft", "attempt": attempt, "ok": True, "iteration": 0,
                         "outputs": {}, "stdout": "", "error": None, "error_code": None, "at": 0.0, **fields})


@pytest.fixture
def run(save_workflow, operator):
    assert Agent.objects.filter(name="mock").update(overridable=["model", "temperature"]) == 1
    return fast_forward(services.run_start(user=operator, version=save_workflow(TWO_TRIES)))


def test_each_attempt_says_which_gateway_took_it_why_and_what_it_spent(client, run, operator):
    event(run, "governance", {"attempt": 1, "gate": "routing", "outcome": "allow",
                              "route": {"gateways": ["gw-east", "gw-west"], "gateway": "gw-east",
                                        "reason": "the first healthy gateway covering gpu"}})
    event(run, "gateway", {"attempt": 1, "iteration": 0, "gateway": "gw-east", "outcome": "unreachable",
                           "reason": "connection refused"})
    event(run, "gateway", {"attempt": 1, "iteration": 0, "gateway": "gw-west", "outcome": "answered", "reason": ""})
    finished(run, 1, model="big-model-2025", tokens=15300, input_tokens=12000, output_tokens=3300, cost=0.0042)
    event(run, "governance", {"attempt": 2, "route": {"gateways": ["gw-east"], "gateway": None,
                                                      "reason": "every gateway covering gpu is unhealthy"}})
    client.force_login(operator)
    html = panel(client, run)
    first = re.search(r'<li data-attempt-call="1">.*?</li>\s*</ul>.*?</li>', html, re.S).group(0)
    said = text(first)
    assert "Attempt 1 taken by gateway gw-west Routing: the first healthy gateway covering gpu (covering, in the " \
           "order tried: gw-east, gw-west)" in said
    assert "gw-east could not be reached: connection refused" in said and "gw-west answered" in said
    assert re.search(r'<li data-outcome="unreachable" class="error">', first)
    assert "model big-model-2025 · 12,000 input + 3,300 output = 15,300 tokens · cost 0.0042" in said
    second = text(re.search(r'<li data-attempt-call="2">.*?</li>', html, re.S).group(0))
    assert "Attempt 2 took no gateway Routing: every gateway covering gpu is unhealthy" in second
    assert "model" not in second  # no result: nothing spent to show


def test_an_attempt_whose_agent_reported_no_split_or_model_says_so(client, run, operator):
    finished(run, 1, tokens=900, cost=0.5)  # an old event: no model, no split
    client.force_login(operator)
    said = text(panel(client, run))
    assert "model not reported · 900 tokens · cost 0.50" in said and "input +" not in said


def test_the_panel_shows_the_agent_as_pinned_and_the_steps_agent_config(client, run, operator):
    Run.objects.filter(pk=run.pk).update(pinned={"agents": {"mock": {
        "provider": "http", "config": {"model": "small-model", "url": "https://bob:hunter2@gw.example/x",
                                       "token_env": "GW_TOKEN"},
        "gateways": ["gw-east", "gw-west"], "prices": [0.5, 1.5], "overridable": ["model", "temperature"]}}})
    client.force_login(operator)
    html = panel(client, run)
    pinned = text(re.search(r'<dl class="pinned".*?</dl>', html, re.S).group(0))
    assert "Agent mock (http)" in pinned
    assert "Model big-model (the step's agent_config; the agent's own: small-model)" in pinned
    assert "Gateways gw-east → gw-west" in pinned
    assert "Prices 0.50 input, 1.50 output per million tokens" in pinned
    assert "agent_config model: big-model , temperature: 0.2" in pinned
    assert "Its configuration as pinned" in html and "small-model" in html
    assert "hunter2" not in html and "[redacted]" in html  # shown as the audit trail shows a configuration


def test_a_run_from_before_pinning_says_only_the_overlay(client, run, operator):
    Run.objects.filter(pk=run.pk).update(pinned={})
    client.force_login(operator)
    html = panel(client, run)
    assert '<dl class="pinned"' not in html and "Gateways, models and tokens" not in html
    assert "agent_config: model: big-model , temperature: 0.2" in text(html)


def test_an_old_run_without_any_of_it_opens_as_before(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(PLAIN)))
    client.force_login(operator)
    html = panel(client, run)
    said = text(html)
    assert "agent_config" not in said and "Artifacts" not in said and "Gateways, models" not in said


def test_the_artifacts_are_listed_with_size_digest_and_attempt_and_refusals_say_why(client, run, operator):
    Artifact.objects.create(run=run, step="draft", attempt=1, path="report/summary.pdf", size=1536,
                            sha256=DIGEST, stored="x1")
    Artifact.objects.create(run=run, step="draft", attempt=2, iteration=3, path="out.json", size=7,
                            sha256="f" * 64, stored="x2")
    event(run, "artifact_refused", {"attempt": 2, "iteration": 0, "path": "report/link.pdf",
                                    "reason": "a symbolic link is never followed"})
    client.force_login(operator)
    html = panel(client, run)
    row = re.search(r'<tr data-artifact="report/summary.pdf".*?</tr>', html, re.S).group(0)
    assert f'data-sha256="{DIGEST}"' in row and f'title="{DIGEST}"' in row and "ab12cd34ef56…" in row
    assert "1.5 KiB" in text(row) and re.search(r"<td>1</td>", row)
    other = text(re.search(r'<tr data-artifact="out.json".*?</tr>', html, re.S).group(0))
    assert "7 bytes" in other and "2 · iteration 3" in other
    assert "report/link.pdf (attempt 2) : a symbolic link is never followed" in text(html)
    url = reverse("console:artifact", args=[run.pk, Artifact.objects.get(path="out.json").pk])
    assert f'href="{url}" download' in html


@pytest.mark.parametrize("size, said", [(0, "0 bytes"), (1, "1 byte"), (1023, "1023 bytes"), (1024, "1.0 KiB"),
                                        (10 * 1024 * 1024, "10.0 MiB"), (100 * 1024**3, "100.0 GiB"),
                                        (3 * 1024**5, "3072.0 TiB")])
def test_a_size_reads_in_units_of_1024(size, said):
    assert size_text(size) == said


def test_hostile_event_data_still_renders(client, run, operator):
    for data in ({"attempt": "1", "route": "x"}, {"attempt": True, "route": {}}, {"attempt": 1, "route": {"gateways": "a"}},
                 {"attempt": 1}):
        event(run, "governance", data)
    event(run, "gateway", {"attempt": 1, "gateway": "<script>", "outcome": None})
    finished(run, 1, tokens=-5, input_tokens="many", cost="free", model=7)
    client.force_login(operator)
    html = panel(client, run)
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_an_attempt_a_gateway_failed_over_says_which_took_it_and_what_it_spent(
        client, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
    """Through real gateways on 127.0.0.1: the first refuses the connection, the second answers with its model and
    token split; the panel reads what the runtime recorded."""
    east, west = gateways
    west.reply = lambda body: (200, {"ok": True, "outputs": {"done": True}, "model": "gpu-model-7",
                                     "input_tokens": 1200, "output_tokens": 345})
    register(east, west)
    east.down()
    run = start(operator, save_workflow, django_capture_on_commit_callbacks)
    assert run.status == "completed"
    client.force_login(operator)
    said = text(re.search(r'<li data-attempt-call="1">.*?</li>\s*</ul>.*?</li>', panel(client, run, "work"),
                          re.S).group(0))
    assert said.startswith("Attempt 1 taken by gateway west Routing: gateway 'east' is the agent's first healthy "
                           "gateway with the capabilities 'gpu' (covering, in the order tried: east, west)"), said
    assert f"east could not be reached: could not connect to 127.0.0.1:{east.port}" in said
    assert "west answered model gpu-model-7" in said  # an outcome's reason that only repeats it is not said twice
    assert "model gpu-model-7 · 1,200 input + 345 output = 1,545 tokens" in said
    pinned = text(re.search(r'<dl class="pinned".*?</dl>', panel(client, run, "work"), re.S).group(0))
    assert "Agent routed (http)" in pinned and "Gateways east → west" in pinned
