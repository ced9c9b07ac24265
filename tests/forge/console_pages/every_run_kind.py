"""A console with a real run of every kind, built once per test module, whose agents hold distinctive secrets.

The runs use the secrets: shell steps print their agent's secret (stdout, stderr, a failure's reason) and the
gateway echoes the token it was sent (in a result and in a refusal), so what the console shows of them is
really redacted, not merely never written. Every value a page must never show is in `World.secrets`.

Built in one transaction that is rolled back when the module ends (Django's setUpTestData pattern): each test's
own transaction is a savepoint inside it. Work a commit would start (an advance, a shell step, a child run) is
run by capturing the on-commit callbacks; `settle` also brings delayed events forward, as `fast_forward` does.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client, TestCase, override_settings
from django.urls import reverse
from django.utils import timezone

from forge.governance.models import Agent, AgentGateway, Gateway
from forge.runs import services
from forge.runs.models import Run, RunInput, StepResult
from forge.schedules.firing import fire_due_schedules
from forge.schedules.models import Schedule
from forge.schedules.services import schedule_add
from forge.workflows.services import workflow_version_save
from tests.forge.api.conftest import serving
from tests.forge.conftest import fast_forward, member

SHELL_SECRET = "vault-key-Qx7Lr2pZ-never-shown"
BEARER_SECRET = "gw-bearer-Jk4Tz9Wd-never-shown"
GATEWAY_TOKEN = "gw-callback-Hh3Wm8Ys-never-shown"
SHELL_ENV = "FORGE_AGENT_SECRET_VAULT_KEY"
BEARER_ENV = "FORGE_AGENT_SECRET_GW_BEARER"

PRINTS = f"""printf 'key=%s\\n' "${SHELL_ENV}"; printf 'stderr key=%s\\n' "${SHELL_ENV}" >&2"""
FAILS = PRINTS + f"""; printf 'failing with %s\\n' "${SHELL_ENV}" >&2; exit 3"""

COMPLETES = f"""
name: every_kind_completes
args:
  note: {{type: string, default: plain}}
phases: [gather]
steps:
  - {{id: reveal, name: Print the vault key, phase: gather, agent: vault, command: {json.dumps(PRINTS)}}}
  - {{id: ask, agent: gw, command: summarise, depends_on: [reveal], outputs: {{summary: {{type: string}}}}}}
  - {{id: later, agent: gw, command: answer later, depends_on: [reveal]}}
  - {{id: done, agent: mock, command: finish, depends_on: [ask, later]}}
"""
FAILS_UPSTREAM = f"""
name: every_kind_fails
steps:
  - {{id: reveal, agent: vault, command: {json.dumps(FAILS)}}}
  - {{id: refused, agent: gw, command: refuse this}}
  - {{id: after_reveal, agent: mock, command: next, depends_on: [reveal]}}
  - {{id: after_both, agent: mock, command: last, depends_on: [after_reveal, refused]}}
"""
RETRIES = f"""
name: every_kind_retries
steps:
  - {{id: flaky, agent: vault, command: {json.dumps(FAILS)}, retry: {{max_retries: 3, backoff_s: 3600}}}}
  - {{id: after, agent: mock, command: next, depends_on: [flaky]}}
"""
ESCALATES = f"""
name: every_kind_escalates
steps:
  - {{id: fragile, agent: vault, command: {json.dumps(FAILS)}, on_failure: retry_once_then_escalate}}
  - {{id: after, agent: mock, command: next, depends_on: [fragile]}}
"""
CANCELS = f"""
name: every_kind_cancels
steps:
  - {{id: reveal, agent: vault, command: {json.dumps(PRINTS)}}}
  - {{id: slow, agent: mock, command: wait, depends_on: [reveal], mock: {{delay_s: 3000}}, timeout: 3600}}
  - {{id: never, agent: mock, command: never, depends_on: [slow]}}
"""
CHILD = f"""
name: every_kind_child
steps:
  - {{id: reveal, agent: vault, command: {json.dumps(PRINTS)}}}
"""
PARENT = """
name: every_kind_parent
steps:
  - {id: prepare, agent: mock, command: prepare}
  - {id: delegate, workflow_ref: every_kind_child, depends_on: [prepare]}
  - {id: use, agent: mock, command: use, depends_on: [delegate]}
"""
WAITS = f"""
name: every_kind_waits
steps:
  - {{id: reveal, agent: vault, command: {json.dumps(PRINTS)}}}
  - {{id: sign_off, approval: required, approval_message: ship it?, depends_on: [reveal]}}
  - {{id: ship, agent: mock, command: ship, depends_on: [sign_off]}}
"""
REPLIES = f"""
name: every_kind_replies
steps:
  - id: ask
    agent: vault
    command: {json.dumps(PRINTS + "; printf 'question %s' ${loop.iteration}")}
    approval_message: "Answer question ${{loop.iteration}}"
    loop: {{max_iterations: 3, until: "iteration >= 3", gate: reply}}
"""
REVIEWS = """
name: every_kind_reviews
steps:
  - id: review
    agent: mock
    command: "Review the change (cycle ${loop.cycle})."
    mock:
      sequence:
        - {stdout: "Missing tests.\\nVERDICT: REQUEST_CHANGES"}
        - {stdout: "Added the tests."}
        - {stdout: "VERDICT: APPROVED"}
    loop:
      max_cycles: 2
      on_request_changes: {fix_command: "Fix: ${loop.review}", re_review_command: "Again after: ${loop.fix}"}
"""

KINDS = ("completed", "failed", "retrying", "escalated", "cancelled", "restarted", "scheduled", "parent", "child",
         "waiting", "replying", "reviewing")


@dataclass
class World:
    people: dict[str, User | None]  # role -> person (None: not logged in)
    runs: dict[str, Run]  # kind -> run
    schedule: Schedule
    secrets: dict[str, str] = field(default_factory=dict)  # what it is -> the value no page may show
    logged: list[str] = field(default_factory=list)  # every log record of the module, as a log file has it


class Kept(logging.Handler):
    """Every record, formatted with its traceback, into `lines`."""

    def __init__(self, lines: list[str]):
        super().__init__(logging.DEBUG)
        self.lines = lines
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record):
        self.lines.append(self.format(record))


def gateway_reply(seen) -> tuple[int, object]:
    """A careless gateway: it repeats the token it was sent, in a refusal and in a result."""
    said, command = seen.headers.get("authorization", ""), seen.json()["command"]
    if "refuse" in command:
        return 401, f"the token in '{said}' is not accepted here".encode()
    if "later" in command:
        return 202, {"accepted": True}  # answered by callback(): see settle
    return 200, {"ok": True, "outputs": {"summary": f"called with {said}"}}


def callback(step) -> None:
    """The gateway's result for a step it accepted, sent with its token, which it repeats (with the agent's)."""
    body = {"run_id": step.run_id, "step": step.step, "attempt": step.attempt, "iteration": 0, "ok": True,
            "outputs": {"echo": f"{GATEWAY_TOKEN} {BEARER_SECRET}"}, "stdout": f"token {GATEWAY_TOKEN}"}
    answer = Client().post(reverse("step-complete"), json.dumps(body), content_type="application/json",
                           headers={"X-Gateway-Token": GATEWAY_TOKEN})
    assert answer.status_code == 200, answer.content


def capture():
    return TestCase.captureOnCommitCallbacks(execute=True)


def settle(run: Run) -> Run:
    """Drive `run` and its child runs until nothing is due but what waits on a person or on a long timer; a step
    the gateway accepted gets its callback."""
    for _ in range(20):
        family = [run, *Run.objects.filter(parent=run)]
        accepted = list(StepResult.objects.filter(run__in=family, agent="gw", status="running"))
        with capture():  # before its timeout is brought forward
            for step in accepted:
                callback(step)
        with capture():
            for each in family:
                fast_forward(each)
        if not accepted and not RunInput.objects.filter(run__in=family, processed_at=None).exists():
            break
    run.refresh_from_db()
    return run


def started(user, source: str, **args) -> Run:
    with capture():
        run = services.run_start(user=user, version=workflow_version_save(user=None, source=source), args=args)
    run.refresh_from_db()
    return run


def build(people: dict) -> tuple[dict[str, Run], Schedule]:
    olive = people["olive"]
    runs = {"completed": settle(started(olive, COMPLETES, note="an ordinary note"))}
    runs["failed"] = settle(started(olive, FAILS_UPSTREAM))
    runs["retrying"] = started(olive, RETRIES)  # its backoff is an hour: not brought forward
    runs["escalated"] = settle(started(olive, ESCALATES))
    cancelled = started(olive, CANCELS)
    with capture():
        services.run_cancel(user=olive, run=cancelled, reason="not needed today")
    runs["cancelled"] = settle(cancelled)
    with capture():
        restarted = services.run_restart(user=olive, run=runs["failed"], step="reveal")
    runs["restarted"] = settle(restarted)
    workflow_version_save(user=None, source=CHILD)
    runs["parent"] = settle(started(olive, PARENT))
    runs["child"] = Run.objects.get(parent=runs["parent"])
    runs["waiting"] = settle(started(olive, WAITS))
    replying = settle(started(olive, REPLIES))  # answered once by an approver, then waiting for the second reply
    with capture():
        services.reply_give(user=people["april"], approval=replying.approvals.get(status="pending"),
                            text="the first answer")
    runs["replying"] = settle(replying)
    runs["reviewing"] = settle(started(olive, REVIEWS))
    schedule = schedule_add(user=olive, workflow="every_kind_completes", cron="* * * * *")
    with capture():
        fire_due_schedules(now=timezone.now() + timedelta(minutes=2))
    runs["scheduled"] = settle(Run.objects.filter(workflow__name="every_kind_completes").latest("pk"))
    return runs, schedule


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The cast (olive: Operators, april: Approvers, adam: Admins, otto: no group, and nobody logged in) and a
    run of every kind (KINDS), in a transaction rolled back after the module."""
    logged, root = [], logging.getLogger()
    kept, level = Kept(logged), root.level
    root.addHandler(kept)
    root.setLevel(logging.DEBUG)
    try:
        yield from _world(django_db_blocker, logged)
    finally:
        root.removeHandler(kept)
        root.setLevel(level)


def _world(django_db_blocker, logged: list[str]):
    with django_db_blocker.unblock(), serving() as gateway, pytest.MonkeyPatch.context() as env:
        env.setenv(SHELL_ENV, SHELL_SECRET)
        env.setenv(BEARER_ENV, BEARER_SECRET)
        gateway.reply = gateway_reply
        reachable = settings.FORGE_EGRESS_ALLOW | {gateway.url.removeprefix("http://")}
        with override_settings(FORGE_EGRESS_ALLOW=reachable), transaction.atomic():
            people = {"olive": member("olive", "Operators"), "april": member("april", "Approvers"),
                      "adam": member("adam", "Admins"), "otto": member("otto"), "anonymous": None}
            Agent.objects.create(name="vault", provider="shell", config={"secret_env": [SHELL_ENV]})
            door = Gateway(name="gw-door", url=gateway.url)
            door.set_token(GATEWAY_TOKEN)
            door.save()
            AgentGateway.objects.create(gateway=door, agent=Agent.objects.create(
                name="gw", provider="http", config={"url": f"{gateway.url}/steps", "token_env": BEARER_ENV}))
            runs, schedule = build(people)
            yield World(people=people, runs=runs, schedule=schedule, secrets={
                "a shell agent's secret": SHELL_SECRET, "an http agent's token": BEARER_SECRET,
                "the gateway's token": GATEWAY_TOKEN, "the secret key": settings.SECRET_KEY}, logged=logged)
            transaction.set_rollback(True)
