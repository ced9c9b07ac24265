"""Agents pinned per run (spec 15): an admin's change to an agent while a run is in flight applies to runs
started after it; the running run, its restarts and its sub-workflows keep what it started with.

Transactional database: runs advance on commit, and their shell, http and openai steps run in the worker
(django-q2 sync). Each run waits at an approval first, so the change happens while it is in flight.
"""

from __future__ import annotations

from unittest import mock

import pytest

from forge.governance.models import Agent, AgentGateway, Gateway, TokenEvent
from forge.runs import services
from forge.runs.models import Run, RunEvent
from forge.runtime.execution import execute_step
from tests.forge.api.conftest import serving
from tests.forge.conftest import steps_of

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

SHOWN = """
name: shown
steps:
  - id: sign_off
    approval: required
  - id: show
    agent: deployer
    command: printf '%s' "$TARGET"
    depends_on: [sign_off]
"""


def approve(run: Run, approver) -> Run:
    services.approval_decide(user=approver, approval=run.approvals.get(step="sign_off"), decision="approve")
    run.refresh_from_db()
    return run


def start(operator, version) -> Run:
    run = services.run_start(user=operator, version=version)
    run.refresh_from_db()
    assert steps_of(run)["sign_off"].status == "waiting"
    return run


def change(name: str, **fields) -> None:
    """What an admin's save in the admin does: the row changes (and this process forgets its snapshot)."""
    agent = Agent.objects.get(name=name)
    for key, value in fields.items():
        setattr(agent, key, value)
    agent.save()


def test_a_config_changed_mid_run_applies_to_new_runs_and_the_running_run_and_its_restart_keep_theirs(
        operator, approver, save_workflow):
    Agent.objects.create(name="deployer", provider="shell", config={"env": {"TARGET": "blue"}})
    version = save_workflow(SHOWN)
    first = start(operator, version)

    change("deployer", config={"env": {"TARGET": "green"}})
    first = approve(first, approver)
    second = approve(start(operator, version), approver)

    assert (first.status, steps_of(first)["show"].stdout) == ("completed", "blue")
    assert (second.status, steps_of(second)["show"].stdout) == ("completed", "green")
    assert first.pinned["agents"]["deployer"]["config"] == {"env": {"TARGET": "blue"}}

    restarted = services.run_restart(user=operator, run=first, step="show")
    restarted.refresh_from_db()
    assert (restarted.status, steps_of(restarted)["show"].stdout) == ("completed", "blue")
    assert restarted.pinned == first.pinned


def test_an_attempt_claimed_after_the_change_runs_as_its_run_started(operator, save_workflow):
    # The worker takes the queued attempt only after the admin's save (a busy queue, a redelivered task, a
    # resumed run): it still runs with the run's pin.
    Agent.objects.create(name="deployer", provider="shell", config={"env": {"TARGET": "blue"}})
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        run = services.run_start(user=operator, version=save_workflow(SHOWN.replace(
            "  - id: sign_off\n    approval: required\n", "  - {id: sign_off, agent: mock, command: ok}\n")))
    assert steps_of(run)["show"].status == "running"

    change("deployer", config={"env": {"TARGET": "green"}})
    execute_step(*enqueue.call_args.args)

    run.refresh_from_db()
    assert (run.status, steps_of(run)["show"].stdout) == ("completed", "blue")


def test_the_pin_holds_the_provider_config_gateways_in_order_prices_and_overridable_keys(operator, save_workflow):
    agent = Agent.objects.create(name="deployer", provider="openai", overridable=["model", "temperature"],
                                 config={"model": "gpt-4o-mini", "api_key_env": "FORGE_AGENT_SECRET_KEY_NAME",
                                         "price_per_million": [1.5, 6]})
    for position, name in enumerate(["gw-b", "gw-a"]):
        AgentGateway.objects.create(agent=agent, gateway=Gateway.objects.create(name=name), position=position)
    Agent.objects.create(name="unused", provider="shell")

    run = start(operator, save_workflow(SHOWN))

    assert run.pinned == {"agents": {"deployer": {
        "provider": "openai",
        "config": {"model": "gpt-4o-mini", "api_key_env": "FORGE_AGENT_SECRET_KEY_NAME", "price_per_million": [1.5, 6]},
        "gateways": ["gw-b", "gw-a"], "prices": [1.5, 6], "overridable": ["model", "temperature"]}}}


CHILD = """
name: child_shows
steps:
  - id: show
    agent: deployer
    command: printf '%s' "$TARGET"
"""

PARENT = """
name: parent_calls
steps:
  - id: sign_off
    approval: required
  - id: call
    workflow_ref: child_shows
    depends_on: [sign_off]
"""


def test_a_sub_workflow_started_after_the_change_keeps_its_parents_agents(operator, approver, save_workflow):
    Agent.objects.create(name="deployer", provider="shell", config={"env": {"TARGET": "blue"}})
    save_workflow(CHILD)
    parent = start(operator, save_workflow(PARENT))

    change("deployer", config={"env": {"TARGET": "green"}})
    parent = approve(parent, approver)

    child = Run.objects.get(parent=parent)
    assert (parent.status, child.status) == ("completed", "completed")
    assert steps_of(child)["show"].stdout == "blue"
    assert child.pinned["agents"]["deployer"] == parent.pinned["agents"]["deployer"]


# -- the model and prices of an openai agent ------------------------------------------------------------------

ASKED = """
name: asked
steps:
  - id: sign_off
    approval: required
  - id: ask
    agent: gpt
    command: review the contract
    timeout: 30
    depends_on: [sign_off]
"""


def completion(model: str) -> dict:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}}


@pytest.fixture
def openai_server(settings, monkeypatch):
    monkeypatch.setenv("FORGE_AGENT_SECRET_TEST_OPENAI_KEY", "sk-test-pinned-0123456789")
    with serving() as server:
        settings.FORGE_EGRESS_ALLOW = settings.FORGE_EGRESS_ALLOW | {server.url.removeprefix("http://")}
        server.reply = lambda seen: (200, completion(seen.json()["model"]))
        yield server


def test_a_model_and_prices_changed_mid_run_apply_to_new_runs_only(operator, approver, save_workflow,
                                                                   openai_server):
    config = {"model": "model-one", "base_url": f"{openai_server.url}/v1", "max_tokens": 2000,
              "api_key_env": "FORGE_AGENT_SECRET_TEST_OPENAI_KEY", "price_per_million": [1, 2]}
    Agent.objects.create(name="gpt", provider="openai", config=config, monthly_budget=100.0)
    version = save_workflow(ASKED)
    first = start(operator, version)

    change("gpt", config={**config, "model": "model-two", "price_per_million": [10, 20]})
    first = approve(first, approver)
    second = approve(start(operator, version), approver)

    assert (first.status, second.status) == ("completed", "completed")
    assert [seen.json()["model"] for seen in openai_server.seen] == ["model-one", "model-two"]
    costs = {e.run_id: e.cost for e in TokenEvent.objects.filter(step="ask")}
    assert costs[first.pk] == pytest.approx((1000 * 1 + 500 * 2) / 1e6)
    assert costs[second.pk] == pytest.approx((1000 * 10 + 500 * 20) / 1e6)
    # The budget held what the pinned price bounds: max_tokens at the higher pinned price.
    estimated = {e.run_id: e.data["estimated_cost"]
                 for e in RunEvent.objects.filter(kind="governance", step="ask")}
    assert estimated == {first.pk: pytest.approx(2000 * 2 / 1e6), second.pk: pytest.approx(2000 * 20 / 1e6)}


# -- the gateway list of an http agent ------------------------------------------------------------------------

REMOTE = """
name: remote
steps:
  - id: sign_off
    approval: required
  - id: call
    agent: remote
    command: summarise
    timeout: 30
    depends_on: [sign_off]
"""


def test_a_gateway_list_changed_mid_run_applies_to_new_runs_only(operator, approver, save_workflow, settings):
    with serving() as old, serving() as new:
        settings.FORGE_EGRESS_ALLOW = settings.FORGE_EGRESS_ALLOW | {
            server.url.removeprefix("http://") for server in (old, new)}
        for server in (old, new):
            server.reply = lambda seen: (200, {"ok": True, "outputs": {}})
        agent = Agent.objects.create(name="remote", provider="http")
        gateways = {}
        for name, server in (("gw-old", old), ("gw-new", new)):
            gateway = Gateway(name=name, url=f"{server.url}/steps")
            gateway.set_token()
            gateway.save()
            gateways[name] = gateway
        AgentGateway.objects.create(agent=agent, gateway=gateways["gw-old"], position=0)
        version = save_workflow(REMOTE)
        first = start(operator, version)

        AgentGateway.objects.filter(agent=agent).delete()  # the admin's new list: gw-new only
        AgentGateway.objects.create(agent=agent, gateway=gateways["gw-new"], position=0)
        change("remote")
        first = approve(first, approver)
        second = approve(start(operator, version), approver)

    assert (first.status, second.status) == ("completed", "completed")
    assert [seen.json()["run_id"] for seen in old.seen] == [str(first.pk)]
    assert [seen.json()["run_id"] for seen in new.seen] == [str(second.pk)]
    assert first.pinned["agents"]["remote"]["gateways"] == ["gw-old"]


# -- an agent created after the run started ----------------------------------------------------------------------

LATE = """
name: late_pinned
steps:
  - id: sign_off
    approval: required
  - id: first
    agent: late
    command: printf '%s' "$TARGET"
    depends_on: [sign_off]
  - id: again
    approval: required
    depends_on: [first]
  - id: second
    agent: late
    command: printf '%s' "$TARGET"
    depends_on: [again]
"""


def decide(run: Run, approver, step: str) -> Run:
    services.approval_decide(user=approver, approval=run.approvals.get(step=step), decision="approve")
    run.refresh_from_db()
    return run


def test_an_agent_created_after_the_run_started_is_pinned_at_its_first_dispatch(operator, approver, save_workflow):
    """The run could not pin an agent that did not exist; once an admin creates it, the run pins it when its first
    step is dispatched and keeps that, however the agent changes later in the run."""
    run = start(operator, save_workflow(LATE))
    assert run.pinned == {"agents": {}}
    Agent.objects.create(name="late", provider="shell", config={"env": {"TARGET": "blue"}})

    run = decide(run, approver, "sign_off")
    assert steps_of(run)["first"].stdout == "blue"
    assert run.pinned["agents"]["late"]["config"] == {"env": {"TARGET": "blue"}}
    change("late", config={"env": {"TARGET": "green"}})
    run = decide(run, approver, "again")

    assert (run.status, steps_of(run)["second"].stdout) == ("completed", "blue")
    assert run.pinned["agents"]["late"]["config"] == {"env": {"TARGET": "blue"}}


def test_a_run_from_before_pinning_reads_an_agent_live_at_each_dispatch(operator, approver, save_workflow):
    Agent.objects.create(name="late", provider="shell", config={"env": {"TARGET": "blue"}})
    run = start(operator, save_workflow(LATE))
    Run.objects.filter(pk=run.pk).update(pinned={})  # as a run started before pinning existed reads

    run = decide(run, approver, "sign_off")
    change("late", config={"env": {"TARGET": "green"}})
    run = decide(run, approver, "again")

    assert (run.status, steps_of(run)["first"].stdout, steps_of(run)["second"].stdout) == ("completed", "blue", "green")
    assert run.pinned == {}
