"""The API's runs operations: start a run, list runs, cancel one. Each through the service or selector the console
calls, each refusal a problem that changes nothing."""

from __future__ import annotations

import json

import pytest

from forge.accounts.tokens import token_create
from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.models import Run, RunInput
from tests.forge.api.runs_api import (  # noqa: F401 - fixtures
    GREET, SLOW, TOKEN, as_, call, done, greet, problem, waiting)
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db


class TestStart:
    def test_an_operator_starts_a_run_of_the_latest_version_with_its_arguments(self, client, operator, greet):
        response = call(as_(client, operator), "post", "/api/v1/runs", {"workflow": "greet", "args": {"who": "bo"}})
        assert response.status_code == 201, response.content
        body = response.json()
        run = Run.objects.get()
        assert body["id"] == run.pk and body["workflow"] == "greet" and body["version"] == greet.number
        assert run.args == {"who": "bo", "times": 1, "api_token": "none-given"}
        assert body["args"] == {**run.args, "api_token": "[redacted]"}  # as the run's header shows it
        assert body["started_by"] == "olive"
        assert AuditEvent.objects.filter(code=codes.RUN_STARTED, run_id=run.pk).count() == 1

    def test_it_starts_the_version_named(self, client, operator, save_workflow, greet):
        save_workflow(GREET.replace("command: bye", "command: goodbye"))
        response = call(as_(client, operator), "post", "/api/v1/runs",
                        {"workflow": "greet", "version": greet.number, "args": {"who": "bo", "times": 3}})
        assert response.status_code == 201 and response.json()["version"] == greet.number
        assert Run.objects.get().version == greet

    def test_the_same_idempotency_key_twice_starts_one_run_and_replays_the_answer(self, client, operator, greet):
        as_(client, operator)
        body = {"workflow": "greet", "args": {"who": "bo"}}
        first = call(client, "post", "/api/v1/runs", body, idempotency_key="start-greet-1")
        again = call(client, "post", "/api/v1/runs", body, idempotency_key="start-greet-1")
        assert first.status_code == again.status_code == 201
        assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()
        assert Run.objects.count() == 1
        other = call(client, "post", "/api/v1/runs", {**body, "args": {"who": "cy"}}, idempotency_key="start-greet-1")
        problem(other, 422)
        assert Run.objects.count() == 1

    @pytest.mark.parametrize("body, status", [
        ({"workflow": "greet", "args": {"who": "bo"}, "priority": 1}, 400),  # an unknown field
        ({"workflow": 5, "args": {"who": "bo"}}, 400),
        ({"workflow": "greet", "args": ["bo"]}, 400),
        ({"workflow": "greet", "version": "1", "args": {"who": "bo"}}, 400),  # a string for a number
        ({"workflow": "greet", "version": True, "args": {"who": "bo"}}, 400),
        ({"workflow": "greet", "version": 1.5, "args": {"who": "bo"}}, 400),
        ({"workflow": "greet", "version": -1, "args": {"who": "bo"}}, 400),
        ({"workflow": "greet", "version": 2**70, "args": {"who": "bo"}}, 400),
        ({"workflow": "x" * 129, "args": {"who": "bo"}}, 400),
        ({"args": {"who": "bo"}}, 400),
        ([], 400),
        ("{not json", 400),
        ({"workflow": "greet", "args": {}}, 422),  # `who` is required
        ({"workflow": "greet", "args": {"who": "bo", "whom": "cy"}}, 422),  # not declared
        ({"workflow": "greet", "args": {"who": "bo", "times": "many"}}, 422),
        ({"workflow": "greet", "args": {"who": "bo", "times": 2**70}}, 400),  # no database keeps it
        ({"workflow": "greet", "args": {"who": "a\u0000b"}}, 400),  # nor a NUL
        ('{"workflow": "greet", "args": {"who": "\\ud800"}}', 400),  # nor an unpaired surrogate
        ('{"workflow": "greet", "args": {"\\ud800": "bo"}}', 400),
        ('{"workflow": "greet", "args": {"who": "bo", "times": NaN}}', 400),
        ({"workflow": "greet", "args": {"who": "b" * 70_000}}, 413),  # past FORGE_MAX_ARGS_BYTES
        ({"workflow": "nope", "args": {"who": "bo"}}, 404),
        ({"workflow": "greet", "version": 99, "args": {"who": "bo"}}, 404),
    ])
    def test_a_bad_body_is_a_problem_and_starts_nothing(self, client, operator, greet, body, status):
        problem(call(as_(client, operator), "post", "/api/v1/runs", body), status)
        assert not Run.objects.exists() and not AuditEvent.objects.filter(code=codes.RUN_STARTED).exists()

    def test_a_deep_body_is_refused_before_it_is_read(self, client, operator, greet):
        deep = {"workflow": "greet", "args": {"who": "bo", "x": json.loads("[" * 40 + "]" * 40)}}
        problem(call(as_(client, operator), "post", "/api/v1/runs", deep), 400)
        assert not Run.objects.exists()

    @pytest.mark.parametrize("who", ["approver", "outsider"])
    def test_who_may_not_start_runs_is_refused(self, client, request, greet, who):
        response = call(as_(client, request.getfixturevalue(who)), "post", "/api/v1/runs",
                        {"workflow": "greet", "args": {"who": "bo"}})
        problem(response, 403, "forbidden")
        assert not Run.objects.exists()

    def test_a_token_without_runs_write_is_refused_for_its_scope(self, client, operator, greet):
        _, secret = token_create(user=operator, name="reader", scopes=["runs:read"])
        response = call(client, "post", "/api/v1/runs", {"workflow": "greet", "args": {"who": "bo"}},
                        authorization=f"Bearer {secret}")
        problem(response, 403, "scope-missing")
        assert not Run.objects.exists()

    def test_anonymous_is_401(self, client, greet):
        problem(call(client, "post", "/api/v1/runs", {"workflow": "greet", "args": {"who": "bo"}}), 401)

    def test_the_wrong_method_is_405(self, client, operator):
        problem(call(as_(client, operator), "put", "/api/v1/runs", {}), 405)
        problem(call(client, "delete", "/api/v1/runs"), 405)


class TestList:
    def test_it_lists_the_runs_newest_first_with_the_console_filters(self, client, approver, operator, greet, done):
        second = services.run_start(user=operator, version=greet, args={"who": "cy"})
        as_(client, approver)
        body = call(client, "get", "/api/v1/runs").json()
        assert [run["id"] for run in body["results"]] == [second.pk, done.pk]
        assert body["results"][1]["args"]["api_token"] == "[redacted]"
        assert TOKEN not in json.dumps(body)
        only = call(client, "get", "/api/v1/runs?status=completed&workflow=greet&started_by=olive").json()
        assert [run["id"] for run in only["results"]] == [done.pk]
        assert call(client, "get", "/api/v1/runs?since=9999-01-01").json()["results"] == []
        assert len(call(client, "get", "/api/v1/runs?until=2999-01-01T00:00Z").json()["results"]) == 2

    def test_it_pages_with_a_cursor(self, client, approver, operator, greet):
        started = [services.run_start(user=operator, version=greet, args={"who": str(n)}).pk for n in range(5)]
        as_(client, approver)
        seen, url = [], "/api/v1/runs?limit=2"
        while url:
            page = call(client, "get", url).json()
            seen += [run["id"] for run in page["results"]]
            url = page["next"]
        assert seen == sorted(started, reverse=True)
        oldest = call(client, "get", "/api/v1/runs?sort=created&limit=3").json()
        assert [run["id"] for run in oldest["results"]] == started[:3]
        assert [run["id"] for run in call(client, "get", oldest["next"]).json()["results"]] == started[3:]

    @pytest.mark.parametrize("query", ["status=lost", "since=yesterday", "until=2026-13-01", "started_by=" + "x" * 200,
                                       "cursor=bogus", "limit=0", "limit=201", "limit=-5", "sort=workflow",
                                       "sort=nope"])
    def test_a_bad_filter_is_a_400_problem(self, client, approver, query):
        problem(call(as_(client, approver), "get", f"/api/v1/runs?{query}"), 400, "bad-request")

    def test_a_page_of_50_runs_costs_a_fixed_number_of_queries(self, client, approver, operator, greet, save_workflow,
                                                               django_assert_max_num_queries):
        other = save_workflow(SLOW)
        for n in range(55):
            services.run_start(user=operator, version=greet if n % 3 else other, args={"who": str(n)} if n % 3 else {})
        as_(client, approver)
        call(client, "get", "/api/v1/runs?limit=1")  # the session's first use is read once
        with django_assert_max_num_queries(4) as few:  # the session, its user, their groups, the page
            assert len(call(client, "get", "/api/v1/runs?limit=2").json()["results"]) == 2
        with django_assert_max_num_queries(len(few.captured_queries)):
            assert len(call(client, "get", "/api/v1/runs").json()["results"]) == 50

    def test_an_outsider_is_refused(self, client, outsider, done):
        problem(call(as_(client, outsider), "get", "/api/v1/runs"), 403, "forbidden")


class TestCancel:
    def test_an_operator_cancels_a_run_with_a_reason(self, client, operator, waiting):
        response = call(as_(client, operator), "post", f"/api/v1/runs/{waiting.pk}/cancel", {"reason": "not now"})
        assert response.status_code == 202, response.content
        assert response.json()["id"] == waiting.pk
        assert RunInput.objects.filter(run=waiting, key="cancel").exists()
        event = AuditEvent.objects.get(code=codes.RUN_CANCEL_REQUESTED, run_id=waiting.pk)
        assert event.detail == {"reason": "not now"}
        assert fast_forward(waiting).status == "cancelled"

    def test_an_ended_run_cannot_be_cancelled(self, client, operator, done):
        problem(call(as_(client, operator), "post", f"/api/v1/runs/{done.pk}/cancel", {}), 409)
        assert not RunInput.objects.filter(run=done, key="cancel").exists()

    @pytest.mark.parametrize("body", [{"reason": "x" * 2001}, {"reason": 5}, {"why": "x"}, [], "nope",
                                      {"reason": "a\u0000b"}, {"reason": None}])
    def test_a_bad_body_cancels_nothing(self, client, operator, waiting, body):
        problem(call(as_(client, operator), "post", f"/api/v1/runs/{waiting.pk}/cancel", body), 400)
        assert not RunInput.objects.filter(run=waiting, key="cancel").exists()

    @pytest.mark.parametrize("who", ["approver", "outsider"])
    def test_who_may_not_cancel_is_refused(self, client, request, waiting, who):
        problem(call(as_(client, request.getfixturevalue(who)), "post", f"/api/v1/runs/{waiting.pk}/cancel", {}), 403)
        assert not RunInput.objects.filter(run=waiting, key="cancel").exists()

    def test_a_runs_write_token_reads_the_runs_it_cancels(self, client, operator, waiting):
        """runs:write includes runs:read: the runs it acts on are found, and listed."""
        _, secret = token_create(user=operator, name="ci", scopes=["runs:write"])
        bearer = {"authorization": f"Bearer {secret}"}
        assert waiting.pk in [r["id"] for r in call(client, "get", "/api/v1/runs", **bearer).json()["results"]]
        assert call(client, "get", f"/api/v1/runs/{waiting.pk}", **bearer).status_code == 200
        response = call(client, "post", f"/api/v1/runs/{waiting.pk}/cancel", {"reason": "ci"}, **bearer)
        assert response.status_code == 202, response.content
        assert AuditEvent.objects.get(code=codes.RUN_CANCEL_REQUESTED, run_id=waiting.pk).token_id is not None
        problem(call(client, "get", "/api/v1/audit", **bearer), 403, "scope-missing")  # no more than it includes

    def test_an_unknown_run_and_the_wrong_method(self, client, operator):
        as_(client, operator)
        problem(call(client, "post", "/api/v1/runs/999999/cancel", {}), 404)
        problem(call(client, "get", "/api/v1/runs/999999/cancel"), 405)
