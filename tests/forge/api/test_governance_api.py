"""The governance operations of /api/v1, for Admins: agents, gateways, budgets, policies and step library entries
through the services the admin calls, checked as the admin's forms check them, audited with the person, never
answering a secret."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from rest_framework.test import APIClient

from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.governance.models import Agent, AgentGateway, BudgetEnvelope, Gateway, Policy
from forge.workflows.models import StepLibraryEntry
from tests.forge.api.calls import API, events, problem, raw, send, signed_in, with_token

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Kind:
    path: str
    model: type
    add: dict
    change: dict
    codes: tuple[str, str, str]  # created, changed, deleted
    bad: list[tuple[str, dict, int, str]] = field(default_factory=list)  # why, body, status, field named


AGENTS = Kind("agents", Agent, {"name": "writer", "provider": "mock", "trust_level": 2, "overridable": ["model"]},
              {"trust_level": 3, "max_concurrency": 2},
              (codes.AGENT_CREATED, codes.AGENT_CHANGED, codes.AGENT_DELETED), [
                  ("an unknown provider", {"provider": "telepathy"}, 400, "provider"),
                  ("a trust level below 0", {"trust_level": -1}, 400, "trust_level"),
                  ("a trust level past its column", {"trust_level": 40000}, 400, "trust_level"),
                  ("a trust level as text", {"trust_level": "2"}, 400, "trust_level"),
                  ("a budget as text", {"monthly_budget": "10"}, 400, "monthly_budget"),
                  ("a huge cost", {"estimated_cost": 1e300}, 400, "estimated_cost"),
                  ("a secret in the config", {"provider": "http", "config": {"api_key": "sk-live-1234"}}, 422,
                   "config"),
                  ("a config that is a list", {"config": ["x"]}, 422, "config"),
                  ("a NUL in the config", {"config": {"model": "a\x00b"}}, 400, "config"),
                  ("an unknown overridable key", {"overridable": ["colour"]}, 422, "overridable"),
                  ("an unknown gateway", {"gateways": ["nowhere"]}, 422, "gateways"),
                  ("a gateway twice", {"gateways": ["gw", "gw"]}, 422, "gateways"),
                  ("a name too long", {"name": "n" * 65}, 400, "name"),
                  ("a name taken", {"name": "taken"}, 422, "name"),
                  ("an unknown field", {"token_hash": "x"}, 400, "token_hash"),
              ])
GATEWAYS = Kind("gateways", Gateway, {"name": "gw2", "url": "https://gateway.example.com/dispatch"},
                {"url": "https://other.example.com/dispatch", "min_trust_level": 1},
                (codes.GATEWAY_CREATED, codes.GATEWAY_CHANGED, codes.GATEWAY_DELETED), [
                    ("not a URL", {"url": "not a url"}, 422, "url"),
                    ("a password in the URL", {"url": "https://u:pw@gateway.example.com/"}, 422, "url"),
                    ("health set by hand", {"healthy": False}, 400, "healthy"),
                    ("a token hash set by hand", {"token_hash": "0" * 64}, 400, "token_hash"),
                ])
BUDGETS = Kind("budgets", BudgetEnvelope, {"name": "org-monthly", "scope": "org", "limit": 10},
               {"limit": 25.5}, (codes.BUDGET_CREATED, codes.BUDGET_CHANGED, codes.BUDGET_DELETED), [
                   ("an unknown scope", {"scope": "team:payments"}, 422, "scope"),
                   ("a negative limit", {"limit": -1}, 422, "limit"),
                   ("a limit that is no number", {"limit": "ten"}, 400, "limit"),
                   ("a limit of null", {"limit": None}, 400, "limit"),
               ])
POLICIES = Kind("policies", Policy, {"name": "low-trust", "when": "agent.trust_level < 2",
                                     "effect": "require_approval"},
                {"when": "agent.trust_level < 3", "effect": "block"},
                (codes.POLICY_CREATED, codes.POLICY_CHANGED, codes.POLICY_DELETED), [
                    ("an expression that does not parse", {"when": "agent.trust_level <"}, 422, "when"),
                    ("an expression that calls", {"when": "__import__('os').system('id')"}, 422, "when"),
                    ("an unknown effect", {"effect": "explode"}, 400, "effect"),
                    ("an order past its column", {"order": 2**40}, 400, "order"),
                ])
LIBRARY = Kind("step-library", StepLibraryEntry, {"name": "notify", "definition": {"agent": "mock"}},
               {"description": "tells the team"}, (codes.LIBRARY_CREATED, codes.LIBRARY_CHANGED,
                                                   codes.LIBRARY_DELETED), [
                   ("a definition that is a list", {"definition": ["agent"]}, 422, "definition"),
                   ("a description too long", {"description": "d" * 10_001}, 400, "description"),
               ])
KINDS = [AGENTS, GATEWAYS, BUDGETS, POLICIES, LIBRARY]


@pytest.fixture(params=KINDS, ids=[kind.path for kind in KINDS])
def kind(request):
    return request.param


@pytest.fixture
def admin(admin_user):
    return signed_in(admin_user)


@pytest.fixture
def existing(kind, admin):
    """One row of the kind, made through the API (and a gateway `gw` and an agent `taken` beside it)."""
    Gateway.objects.create(name="gw")
    Agent.objects.create(name="taken", provider="mock")
    answer = send(admin, "POST", kind.path, kind.add)
    assert answer.status_code == 201, answer.content
    return kind.model.objects.get(pk=answer.json()["id"])


def test_an_admin_makes_a_row_audited_in_their_name(kind, existing):
    (event,) = events(kind.codes[0])
    assert event.actor == "adam" and event.target.endswith(f":{existing.name}")
    for name, value in kind.add.items():
        assert getattr(existing, name) == value


def test_an_admin_lists_and_reads_the_rows(kind, existing, admin):
    listed = admin.get(API + kind.path).json()["results"]
    assert existing.pk in [row["id"] for row in listed]
    assert admin.get(API + f"{kind.path}/{existing.pk}").json()["name"] == existing.name


def test_a_change_takes_the_fields_given_audited(kind, existing, admin):
    answer = send(admin, "PATCH", f"{kind.path}/{existing.pk}", kind.change)
    assert answer.status_code == 200, answer.content
    existing.refresh_from_db()
    for name, value in kind.change.items():
        assert getattr(existing, name) == value and answer.json()[name] == value
    (event,) = events(kind.codes[1])
    assert event.actor == "adam" and set(event.detail["after"]) == set(kind.change)


def test_delete_removes_the_row_audited(kind, existing, admin):
    assert send(admin, "DELETE", f"{kind.path}/{existing.pk}").status_code == 204
    assert not kind.model.objects.filter(pk=existing.pk).exists()
    (event,) = events(kind.codes[2])
    assert event.actor == "adam"
    problem(send(admin, "DELETE", f"{kind.path}/{existing.pk}"), 404)


def test_an_unknown_id_is_a_404(kind, existing, admin):
    other = existing.pk + 1000
    problem(admin.get(API + f"{kind.path}/{other}"), 404)
    problem(send(admin, "PATCH", f"{kind.path}/{other}", kind.change), 404)
    problem(send(admin, "DELETE", f"{kind.path}/{'9' * 30}"), 404)


@pytest.mark.parametrize("who", ["operator", "approver", "outsider"])
def test_only_admins_read_or_change_the_configuration(kind, existing, who, request):
    client = signed_in(request.getfixturevalue(who))
    before, rows = AuditEvent.objects.count(), kind.model.objects.count()
    problem(client.get(API + kind.path), 403)
    problem(client.get(API + f"{kind.path}/{existing.pk}"), 403)
    problem(send(client, "POST", kind.path, {**kind.add, "name": "another"}), 403)
    problem(send(client, "PATCH", f"{kind.path}/{existing.pk}", kind.change), 403)
    problem(send(client, "DELETE", f"{kind.path}/{existing.pk}"), 403)
    assert kind.model.objects.count() == rows and AuditEvent.objects.count() == before


def test_an_admins_token_needs_governance_admin(kind, existing, admin_user):
    assert problem(with_token(admin_user, "runs:read").get(API + kind.path), 403)["code"] == "scope_missing"
    client = with_token(admin_user, "governance:admin")
    assert send(client, "DELETE", f"{kind.path}/{existing.pk}").status_code == 204
    assert events(kind.codes[2])[0].token_id is not None


def test_nobody_signed_in_is_told_to_sign_in(kind, existing):
    problem(APIClient().get(API + kind.path), 401)


def test_a_wrong_method_is_a_405(kind, existing, admin):
    problem(send(admin, "PUT", f"{kind.path}/{existing.pk}", kind.add), 405)
    problem(send(admin, "DELETE", kind.path), 405)


def bad_cases():
    return [pytest.param(kind, body, status, name, id=f"{kind.path}: {why}")
            for kind in KINDS for why, body, status, name in kind.bad]


@pytest.mark.parametrize("kind,body,status,name", bad_cases())
def test_a_bad_body_is_a_problem_naming_its_field_and_changes_nothing(existing, admin, kind, body, status, name):
    stored = kind.model.objects.filter(pk=existing.pk).values().get()
    before = AuditEvent.objects.count()
    made = problem(send(admin, "POST", kind.path, {**kind.add, "name": "fresh", **body}), status)
    assert name in made["errors"], made
    changed = problem(send(admin, "PATCH", f"{kind.path}/{existing.pk}", body), status)
    assert name in changed["errors"], changed
    assert kind.model.objects.filter(pk=existing.pk).values().get() == stored
    assert not kind.model.objects.filter(name="fresh").exists() and AuditEvent.objects.count() == before


@pytest.mark.parametrize("text", ["{", "[]", '{"name": 1e400}', "[" * 40 + "]" * 40, '{"name": "a", "name": 5}'])
def test_a_body_that_is_no_object_of_fields_is_a_400(kind, existing, admin, text):
    before = kind.model.objects.count()
    problem(raw(admin, "POST", kind.path, text), 400)
    assert kind.model.objects.count() == before


def test_a_list_reads_a_bounded_number_of_queries(kind, existing, admin, django_assert_max_num_queries):
    for number in range(10):
        send(admin, "POST", kind.path, {**kind.add, "name": f"{kind.add['name']}-{number}"})
    admin.get(API + kind.path)
    with django_assert_max_num_queries(8):
        answer = admin.get(API + kind.path)
    assert len(answer.json()["results"]) == kind.model.objects.count() >= 11


# -- agents and their gateways; secrets ----------------------------------------------------------------------------

def test_an_agents_gateways_are_set_in_order_with_it(admin):
    for name in ("a", "b"):
        Gateway.objects.create(name=name)
    answer = send(admin, "POST", "agents", {"name": "remote", "provider": "http", "gateways": ["b", "a"]})
    assert answer.status_code == 201, answer.content
    assert answer.json()["gateways"] == ["b", "a"]
    agent = Agent.objects.get(name="remote")
    changed = send(admin, "PATCH", f"agents/{agent.pk}", {"gateways": ["a"]}).json()
    assert changed["gateways"] == ["a"]
    assert [route.gateway.name for route in AgentGateway.objects.filter(agent=agent)] == ["a"]
    gateway_event = events(codes.AGENT_CHANGED)[-1]
    assert gateway_event.detail == {"before": {"gateways": ["b", "a"]}, "after": {"gateways": ["a"]}}


def test_an_agent_refused_for_its_gateways_is_not_made(admin):
    problem(send(admin, "POST", "agents", {"name": "remote", "provider": "http", "gateways": ["missing"]}), 422)
    assert not Agent.objects.filter(name="remote").exists() and not events(codes.AGENT_CREATED)


def test_overridable_keys_are_kept_in_agent_configs_order(admin):
    answer = send(admin, "POST", "agents", {"name": "m", "provider": "mock",
                                            "overridable": ["max_tokens", "model"]})
    assert answer.json()["overridable"] == ["model", "max_tokens"]


def test_an_agents_environment_is_answered_redacted_and_kept_when_sent_back(admin):
    config = {"env": {"REGION": "eu-west-1", "GREETING": "hello"}}
    made = send(admin, "POST", "agents", {"name": "sh", "provider": "shell", "config": config}).json()
    assert made["config"] == {"env": {"REGION": "[redacted]", "GREETING": "[redacted]"}}
    sent_back = {"env": {**made["config"]["env"], "GREETING": "bonjour"}}
    answer = send(admin, "PATCH", f"agents/{made['id']}", {"config": sent_back})
    assert answer.status_code == 200, answer.content
    assert Agent.objects.get(name="sh").config == {"env": {"REGION": "eu-west-1", "GREETING": "bonjour"}}
    listed = admin.get(API + "agents").content.decode()
    assert "eu-west-1" not in listed and "bonjour" not in listed


def test_a_gateway_in_use_is_not_deleted(admin):
    gateway = Gateway.objects.create(name="gw")
    send(admin, "POST", "agents", {"name": "remote", "provider": "http", "gateways": ["gw"]})
    body = problem(send(admin, "DELETE", f"gateways/{gateway.pk}"), 409)
    assert "remote" in body["detail"]
    assert Gateway.objects.filter(pk=gateway.pk).exists() and not events(codes.GATEWAY_DELETED)


def test_a_gateways_token_is_shown_once_and_never_its_hash(admin):
    gateway = Gateway.objects.create(name="gw")
    assert admin.get(API + f"gateways/{gateway.pk}").json()["has_token"] is False
    answer = send(admin, "POST", f"gateways/{gateway.pk}/token")
    assert answer.status_code == 201 and answer["Cache-Control"] == "no-store"
    token = answer.json()["token"]
    gateway.refresh_from_db()
    assert gateway.token_matches(token)
    shown = admin.get(API + f"gateways/{gateway.pk}")
    assert shown.json()["has_token"] is True
    assert token not in shown.content.decode() and gateway.token_hash not in shown.content.decode()
    assert "token_hash" not in shown.json()
    (event,) = events(codes.GATEWAY_TOKEN_ISSUED)
    assert event.actor == "adam" and event.detail == {}
    problem(send(admin, "POST", f"gateways/{gateway.pk + 1}/token"), 404)
    problem(admin.get(API + f"gateways/{gateway.pk}/token"), 405)


def test_a_retried_gateway_token_request_issues_once_and_never_keeps_the_token(admin):
    from forge.api.models import IdempotencyKey

    gateway = Gateway.objects.create(name="gw")
    first = admin.post(API + f"gateways/{gateway.pk}/token", {}, format="json", HTTP_IDEMPOTENCY_KEY="issue-1")
    again = admin.post(API + f"gateways/{gateway.pk}/token", {}, format="json", HTTP_IDEMPOTENCY_KEY="issue-1")
    assert first.status_code == again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    token = first.json()["token"]
    assert again.json() == {"gateway": "gw", "token": None}
    gateway.refresh_from_db()
    assert gateway.token_matches(token) and len(events(codes.GATEWAY_TOKEN_ISSUED)) == 1
    assert token.encode() not in bytes(IdempotencyKey.objects.get().body)


def test_only_admins_issue_a_gateways_token(operator):
    gateway = Gateway.objects.create(name="gw")
    problem(send(signed_in(operator), "POST", f"gateways/{gateway.pk}/token"), 403)
    gateway.refresh_from_db()
    assert not gateway.token_hash


def test_a_row_is_saved_only_with_its_audit_row(admin, monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("the audit trail could not be written")

    monkeypatch.setattr("forge.governance.services.audit", refuse)
    with pytest.raises(RuntimeError):
        send(admin, "POST", "budgets", BUDGETS.add)
    assert not BudgetEnvelope.objects.exists()


def test_a_name_taken_by_a_racing_request_is_a_409(admin, monkeypatch):
    monkeypatch.setattr(BudgetEnvelope, "validate_unique", lambda self, exclude=None: None)  # the other request
    send(admin, "POST", "budgets", BUDGETS.add)  # committed after this one's check read the table
    body = problem(send(admin, "POST", "budgets", BUDGETS.add), 409)
    assert body["code"] == "name_taken" and BudgetEnvelope.objects.count() == 1
    assert len(events(codes.BUDGET_CREATED)) == 1
