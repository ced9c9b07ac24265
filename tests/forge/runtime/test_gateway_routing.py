"""Routing over an agent's gateways, their measured health, connection retries and cancels (spec 15).

The gateways are real HTTP servers on 127.0.0.1 (allowed by FORGE_EGRESS_ALLOW for the test) that can go down
(their port refuses connections) and come up again on the same port. The runtime's clock is played by the test:
`wake_due_retries` after moving a retry's due time into the past, `probe_gateways` when a probe would run.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django_q.brokers import get_broker

from forge.audit.models import AuditEvent
from forge.env import env_seconds_list
from forge.governance.models import Agent, AgentGateway, Gateway, Policy
from forge.runs import services
from forge.runs.models import Run, RunEvent, RunInput, StepResult
from forge.runtime.rounds import advance
from forge.runtime.broker import Clock
from forge.runtime.gateways import wake_due_retries
from forge.runtime.probe import probe_gateways
from forge.runtime.recovery import reap
from tests.fake_gateway import WORKFLOW, FakeGateway
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db

TOKEN_ENV = "FORGE_AGENT_SECRET_ROUTED_TOKEN"


@pytest.fixture
def gateways(settings, monkeypatch):
    """Two gateways with a GPU, up, that agents may reach; the retries' waits are the spec's 1, 4 and 16 s."""
    monkeypatch.setenv(TOKEN_ENV, "routed-bearer-token")
    east, west = FakeGateway("east").up(), FakeGateway("west").up()
    settings.FORGE_EGRESS_ALLOW = settings.FORGE_EGRESS_ALLOW | {f"127.0.0.1:{east.port}", f"127.0.0.1:{west.port}"}
    settings.FORGE_GATEWAY_RETRY_S = (1.0, 4.0, 16.0)
    yield east, west
    east.down()
    west.down()


def register(*fakes: FakeGateway, capabilities=("gpu",), cancel: bool = False) -> Agent:
    """The http agent `routed`, whose gateways are `fakes` in that order."""
    agent = Agent.objects.create(name="routed", provider="http", config={"token_env": TOKEN_ENV})
    for position, fake in enumerate(fakes):
        row = Gateway.objects.create(name=fake.name, url=f"{fake.url}/dispatch", health_url=f"{fake.url}/health",
                                     cancel_url=f"{fake.url}/cancel" if cancel else "",
                                     capabilities=list(capabilities))
        AgentGateway.objects.create(agent=agent, gateway=row, position=position)
    return agent


def start(operator, save_workflow, capture, source: str = WORKFLOW) -> Run:
    with capture(execute=True):
        run = services.run_start(user=operator, version=save_workflow(source))
    run.refresh_from_db()
    return run


def contacts(run: Run) -> list[tuple[str, str]]:
    return [(e.data["gateway"], e.data["outcome"]) for e in RunEvent.objects.filter(run=run, kind="gateway")]


def route_of(run: Run) -> dict:
    return RunEvent.objects.filter(run=run, kind="governance").last().data["route"]


def gateway(name: str) -> Gateway:
    return Gateway.objects.get(name=name)


def work(run: Run) -> StepResult:
    return StepResult.objects.get(run=run, step="work")


def clock_retries(run: Run, capture) -> list[float]:
    """Play the clock: each time the attempt waits for a retry, note how long, let the time pass and wake it."""
    waits = []
    for _ in range(10):
        row = work(run)
        if row.lease_owner != "retry":
            break
        waits.append(round((row.lease_expires_at - row.updated_at).total_seconds()))
        StepResult.objects.filter(pk=row.pk).update(lease_expires_at=timezone.now() - timedelta(milliseconds=1))
        with capture(execute=True):
            assert wake_due_retries() == 1
    run.refresh_from_db()
    return waits


class TestFailover:
    def test_a_dispatch_that_cannot_connect_goes_to_the_next_covering_gateway_at_once(
            self, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
        east, west = gateways
        register(east, west)
        east.down()

        run = start(operator, save_workflow, django_capture_on_commit_callbacks)

        assert (run.status, work(run).outputs) == ("completed", {"done": True})
        assert contacts(run) == [("east", "unreachable"), ("west", "answered")]
        assert west.paths() == ["/dispatch"]
        sent = west.seen[0]
        assert sent[2]["authorization"] == "Bearer routed-bearer-token" and sent[3]["step"] == "work"
        assert route_of(run)["gateways"] == ["east", "west"] and route_of(run)["gateway"] == "east"
        assert work(run).dispatch["route"]["gateway"] == "west"  # the one that took it
        down = gateway("east")
        assert (down.healthy, down.failures) == (True, 1)  # one refusal is not yet a dead gateway
        assert f"127.0.0.1:{east.port}" in down.last_error and "/dispatch" not in down.last_error

    def test_a_gateway_lacking_the_capability_is_passed_over(self, operator, save_workflow, gateways,
                                                             django_capture_on_commit_callbacks):
        east, west = gateways
        register(east, capabilities=("cpu",))
        AgentGateway.objects.create(agent=Agent.objects.get(name="routed"), position=1,
                                    gateway=Gateway.objects.create(name="west", url=f"{west.url}/dispatch",
                                                                   capabilities=["gpu", "cpu"]))

        run = start(operator, save_workflow, django_capture_on_commit_callbacks)

        assert run.status == "completed" and east.seen == []
        assert route_of(run)["gateway"] == "west" and "'east' (lacks 'gpu')" in route_of(run)["reason"]


    def test_an_agent_that_cannot_authenticate_sends_nothing_and_blames_no_gateway(
            self, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
        east, west = gateways
        agent = register(east, west)
        agent.config = {"token_env": "HOME"}  # saved without validation: no agent secret's name
        agent.save()
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        assert (run.status, work(run).error_code) == ("failed", "agent_error")
        assert "token_env" in work(run).error
        assert east.seen == west.seen == [] and contacts(run) == []
        assert [(g.healthy, g.failures) for g in Gateway.objects.all()] == [(True, 0), (True, 0)]

    def test_an_agent_config_refused_at_dispatch_sends_nothing_and_measures_no_gateway(
            self, operator, approver, save_workflow, gateways, django_capture_on_commit_callbacks):
        """A run that could not pin its agent checks the step's agent_config at the call: refused, it is the
        step's fault, so no gateway is contacted, marked reached or said to have answered."""
        east, west = gateways
        agent = register(east, west)
        agent.overridable = ["model"]
        agent.save()
        source = WORKFLOW.replace("steps:\n", "steps:\n  - id: sign_off\n    approval: required\n").replace(
            "    capabilities: [gpu]\n", "    capabilities: [gpu]\n    depends_on: [sign_off]\n"
                                        "    agent_config: {model: big-model}\n")
        run = start(operator, save_workflow, django_capture_on_commit_callbacks, source)
        Run.objects.filter(pk=run.pk).update(pinned={})  # as a run started before pinning reads its agents live
        Gateway.objects.update(failures=3, last_error="earlier")
        agent.overridable = []
        agent.save()

        with django_capture_on_commit_callbacks(execute=True):
            services.approval_decide(user=approver, approval=run.approvals.get(step="sign_off"), decision="approve")

        run.refresh_from_db()
        assert (run.status, work(run).error_code) == ("failed", "agent_config_refused")
        assert east.seen == west.seen == [] and contacts(run) == []
        assert [(g.failures, g.last_error) for g in Gateway.objects.order_by("name")] == [(3, "earlier")] * 2


class TestMeasuredHealth:
    def test_the_probe_marks_a_gateway_unhealthy_and_healthy_again_and_dispatches_follow(
            self, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
        east, west = gateways
        register(east, west)
        east.down()

        assert probe_gateways() == {"healthy": 1, "unhealthy": 1}
        measured = gateway("east")
        assert (measured.healthy, measured.failures) == (False, 1) and measured.checked_at is not None
        assert "could not connect" in measured.last_error
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        assert run.status == "completed" and contacts(run) == [("west", "answered")]
        assert route_of(run)["gateway"] == "west" and "'east' (unhealthy)" in route_of(run)["reason"]

        east.up()
        checked = measured.checked_at
        assert probe_gateways() == {"healthy": 2, "unhealthy": 0}
        back = gateway("east")
        assert (back.healthy, back.failures) == (True, 0) and back.checked_at > checked
        assert east.paths("GET") == ["/health"]
        again = start(operator, save_workflow, django_capture_on_commit_callbacks)
        assert contacts(again) == [("east", "answered")]

    def test_the_probe_goes_through_the_egress_checks(self, settings, gateways):
        east, _ = gateways
        Gateway.objects.create(name="metadata", health_url="http://169.254.169.254/latest/meta-data/")
        settings.FORGE_EGRESS_ALLOW = frozenset()
        probe_gateways()
        refused = gateway("metadata")
        assert refused.healthy is False and "refused" in refused.last_error
        assert "latest" not in refused.last_error  # a path may carry a credential: never in a message

    def test_a_gateway_without_a_health_url_is_not_probed(self, gateways):
        Gateway.objects.create(name="quiet", url="http://127.0.0.1:9/", healthy=False)
        assert probe_gateways() == {"healthy": 0, "unhealthy": 0}
        assert gateway("quiet").checked_at is None


class TestConnectionRetries:
    def test_a_refused_connection_is_retried_after_1_4_and_16_s_then_the_attempt_fails(
            self, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
        east, west = gateways
        register(east)
        east.down()

        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        assert (run.status, work(run).status, work(run).lease_owner) == ("running", "running", "retry")
        waits = clock_retries(run, django_capture_on_commit_callbacks)

        assert waits == [1, 4, 16]
        outcomes = [outcome for _, outcome in contacts(run)]
        assert outcomes == ["unreachable", "retry"] * 3 + ["unreachable"]
        assert (run.status, work(run).status, work(run).error_code) == ("failed", "failed", "gateway_unreachable")
        assert "after 3 retries" in work(run).error
        dead = gateway("east")
        assert (dead.healthy, dead.failures) == (False, 4)  # one dispatch and its three retries, all refused

    def test_the_retries_wait_as_the_setting_says(self, operator, save_workflow, settings, gateways,
                                                  django_capture_on_commit_callbacks):
        east, _ = gateways
        settings.FORGE_GATEWAY_RETRY_S = (0.0, 2.0)
        register(east)
        east.down()
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        assert clock_retries(run, django_capture_on_commit_callbacks) == [0, 2]
        assert work(run).error_code == "gateway_unreachable" and "after 2 retries" in work(run).error

    def test_a_gateway_back_before_the_retries_run_out_takes_the_attempt_and_is_healthy(
            self, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
        east, _ = gateways
        register(east)
        east.down()
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        assert work(run).lease_owner == "retry"

        east.up()
        assert clock_retries(run, django_capture_on_commit_callbacks) == [1]

        assert (run.status, work(run).outputs) == ("completed", {"done": True})
        assert [outcome for _, outcome in contacts(run)] == ["unreachable", "retry", "answered"]
        assert (gateway("east").healthy, gateway("east").failures) == (True, 0)

    def test_a_retry_is_no_crash_and_no_reaper_takes_it(self, operator, save_workflow, gateways,
                                                        django_capture_on_commit_callbacks):
        east, _ = gateways
        register(east)
        east.down()
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        StepResult.objects.filter(pk=work(run).pk).update(lease_expires_at=timezone.now() - timedelta(seconds=60))
        assert reap(timezone.now()) == 0
        run.refresh_from_db()
        assert run.restart_count == 0

    def test_a_cancel_while_waiting_for_a_retry_ends_it(self, operator, save_workflow, gateways,
                                                        django_capture_on_commit_callbacks):
        east, _ = gateways
        register(east)
        east.down()
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        with django_capture_on_commit_callbacks(execute=True):
            services.run_cancel(user=operator, run=run)
        StepResult.objects.filter(run=run).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        assert wake_due_retries() == 0
        run.refresh_from_db()
        assert run.status == "cancelled"


class TestBlockedByRouting:
    def test_no_gateway_with_the_capability_is_capability_missing_and_not_retried(
            self, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
        east, west = gateways
        register(east, west, capabilities=("cpu",))
        run = fast_forward(start(operator, save_workflow, django_capture_on_commit_callbacks))
        assert (run.status, work(run).error_code) == ("failed", "capability_missing")
        blocks = AuditEvent.objects.filter(code="forge.governance.blocked", run_id=run.pk)
        assert [(b.detail["code"], b.detail["retryable"]) for b in blocks] == [("capability_missing", False)]
        assert "'gpu'" in work(run).error and east.seen == west.seen == []

    def test_covering_gateways_all_unhealthy_is_gateway_unreachable_and_retried(
            self, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
        east, west = gateways
        register(east, west)
        Gateway.objects.update(healthy=False)
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        assert (work(run).status, work(run).wait, work(run).error_code) == ("pending", "gate_retry",
                                                                             "gateway_unreachable")
        assert route_of(run) == {"gateways": ["east", "west"], "gateway": None,
                                 "reason": "every gateway that covers the step ('east', 'west') is unhealthy"}
        Gateway.objects.filter(name="west").update(healthy=True)  # as its probe would
        RunInput.objects.filter(run=run, processed_at=None).update(due_at=timezone.now())  # the gate's backoff passed
        with django_capture_on_commit_callbacks(execute=True):
            advance(run.pk)
        run.refresh_from_db()
        assert run.status == "completed" and contacts(run) == [("west", "answered")]

    def test_an_agent_without_gateways_is_checked_against_its_own_capabilities(
            self, operator, save_workflow, django_capture_on_commit_callbacks):
        source = WORKFLOW.replace("agent: routed", "agent: local").replace("timeout: 60", "mock: {outputs: {done: true}}")
        Agent.objects.create(name="local", provider="mock", config={"capabilities": ["gpu"]})
        assert start(operator, save_workflow, django_capture_on_commit_callbacks, source).status == "completed"
        local = Agent.objects.get(name="local")
        local.config = {"capabilities": ["cpu"]}
        local.save()
        run = fast_forward(start(operator, save_workflow, django_capture_on_commit_callbacks, source))
        assert (run.status, work(run).error_code) == ("failed", "capability_missing")

    def test_a_policy_reads_the_routed_gateways_capabilities_and_name(
            self, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
        east, west = gateways
        register(east, west)
        Gateway.objects.filter(name="east").update(capabilities=["gpu", "shared"])
        Policy.objects.create(name="no-shared-gpus", when="'shared' in gateway.capabilities", effect="block",
                              message="shared GPUs are for experiments")
        run = fast_forward(start(operator, save_workflow, django_capture_on_commit_callbacks))
        assert (run.status, work(run).error_code) == ("failed", "policy_blocked")
        assert "shared GPUs" in work(run).error and east.seen == []

        policy = Policy.objects.get()
        policy.when = "gateway.name == 'west'"
        policy.save()
        Gateway.objects.filter(name="east").update(healthy=False)
        run = fast_forward(start(operator, save_workflow, django_capture_on_commit_callbacks))
        assert work(run).error_code == "policy_blocked" and west.seen == []


class TestCancelUrl:
    @pytest.fixture
    def accepted(self, operator, save_workflow, gateways, django_capture_on_commit_callbacks):
        east, west = gateways
        register(east, west, cancel=True)
        east.down()
        west.reply = lambda body: (202, {"accepted": True})
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        assert (work(run).status, work(run).lease_owner) == ("running", "gateway")
        return run, west

    def test_a_cancelled_step_a_gateway_took_is_told_at_its_cancel_url(self, operator, accepted,
                                                                        django_capture_on_commit_callbacks):
        run, west = accepted
        with django_capture_on_commit_callbacks(execute=True):
            services.run_cancel(user=operator, run=run)
        (cancel,) = [seen for seen in west.seen if seen[1] == "/cancel"]
        assert cancel[3] == {"run_id": str(run.pk), "step": "work", "attempt": 1, "iteration": 0,
                             "reason": "run_cancelled"}
        assert cancel[2]["authorization"] == "Bearer routed-bearer-token"
        assert contacts(run)[-2:] == [("west", "accepted"), ("west", "cancel_sent")]

    def test_a_timed_out_step_a_gateway_took_is_told_at_its_cancel_url(self, accepted,
                                                                        django_capture_on_commit_callbacks):
        run, west = accepted
        with django_capture_on_commit_callbacks(execute=True):
            run = fast_forward(run)  # the step's timeout falls due
        assert (run.status, work(run).error_code) == ("failed", "timeout")
        (cancel,) = [seen for seen in west.seen if seen[1] == "/cancel"]
        assert (cancel[3]["step"], cancel[3]["reason"]) == ("work", "timeout")
        assert contacts(run)[-1] == ("west", "cancel_sent")

    def test_a_gateway_without_a_cancel_url_is_not_told(self, operator, save_workflow, gateways,
                                                        django_capture_on_commit_callbacks):
        east, _ = gateways
        register(east)
        east.reply = lambda body: (202, {"accepted": True})
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        with django_capture_on_commit_callbacks(execute=True):
            services.run_cancel(user=operator, run=run)
        assert east.paths() == ["/dispatch"] and contacts(run) == [("east", "accepted")]

    def test_a_cancel_the_gateway_refuses_is_said_in_the_run(self, operator, accepted,
                                                             django_capture_on_commit_callbacks):
        run, west = accepted
        west.down()
        with django_capture_on_commit_callbacks(execute=True):
            services.run_cancel(user=operator, run=run)
        event = RunEvent.objects.filter(run=run, kind="gateway").last()
        assert event.data["outcome"] == "cancel_failed" and "could not connect" in event.data["reason"]


class TestTheRuntimesClock:
    def test_the_clock_probes_every_interval_and_queues_a_due_retry(self, settings, operator, save_workflow,
                                                                     gateways, django_capture_on_commit_callbacks):
        east, _ = gateways
        register(east)
        east.down()
        run = start(operator, save_workflow, django_capture_on_commit_callbacks)
        StepResult.objects.filter(pk=work(run).pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        clock = Clock()
        clock.last_probe -= settings.FORGE_GATEWAY_PROBE_S  # an interval has passed

        with django_capture_on_commit_callbacks(execute=True):
            clock.tick(get_broker())

        probed = gateway("east")
        assert probed.healthy is False and probed.failures == 3  # two refused dispatches, then the failed probe
        assert east.paths("GET") == []  # it was down: nothing reached it
        assert [outcome for _, outcome in contacts(run)] == ["unreachable", "retry", "unreachable", "retry"]
        clock.last_tick = 0.0
        checked = probed.checked_at
        clock.tick(get_broker())  # no interval has passed, no retry is due: nothing probed or queued
        assert gateway("east").checked_at == checked and len(contacts(run)) == 4


class TestRetrySetting:
    @pytest.mark.parametrize("raw, waits", [("1,4,16", (1.0, 4.0, 16.0)), (" 0.5 , 2 ", (0.5, 2.0)), ("", ()),
                                            ("0", (0.0,)), ("86400", (86400.0,))])
    def test_valid_waits_are_read(self, monkeypatch, raw, waits):
        monkeypatch.setenv("FORGE_GATEWAY_RETRY_S", raw)
        assert env_seconds_list("FORGE_GATEWAY_RETRY_S", (9.0,)) == waits

    @pytest.mark.parametrize("raw", ["1,x", "-1", "nan", "inf", "86401", "1e400"])
    def test_a_bad_wait_is_refused_with_its_name(self, monkeypatch, raw):
        monkeypatch.setenv("FORGE_GATEWAY_RETRY_S", raw)
        with pytest.raises(ImproperlyConfigured, match="FORGE_GATEWAY_RETRY_S"):
            env_seconds_list("FORGE_GATEWAY_RETRY_S", ())


def test_a_step_the_timeout_enforcer_ends_is_told_at_its_gateways_cancel_url(operator, save_workflow, gateways,
                                                                             django_capture_on_commit_callbacks):
    """The enforcer's fallback (its deadline passed and no timer ended it) tells the gateway as a timeout does."""
    from forge.runtime.recovery import enforce_timeouts
    east, _ = gateways
    register(east, cancel=True)
    east.reply = lambda body: (202, {"accepted": True})
    run = start(operator, save_workflow, django_capture_on_commit_callbacks)
    StepResult.objects.filter(pk=work(run).pk).update(deadline_at=timezone.now() - timedelta(minutes=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert enforce_timeouts(timezone.now()) == 1
    run.refresh_from_db()
    assert (run.status, work(run).error_code) == ("failed", "timeout")
    (cancel,) = [seen for seen in east.seen if seen[1] == "/cancel"]
    assert cancel[3]["reason"] == "timeout" and contacts(run)[-1] == ("east", "cancel_sent")
