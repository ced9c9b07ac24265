"""The API's runs operations: start, list, read with steps, a step's attempts, outputs and log, cancel, the restart
plan and the restart bound to it. Each as the console's services and selectors do it, each refusal a problem that
changes nothing."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from forge.accounts.tokens import token_create
from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.models import Run, RunInput
from forge.runs.restart_plan import restart_plan
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"
TOKEN = "tok-4242-hidden"

GREET = """
name: greet
args:
  who: {type: string, required: true}
  times: {type: integer, default: 1}
  api_token: {type: string, default: none-given}
steps:
  - id: hello
    agent: mock
    command: "say hello to ${args.who} with ${args.api_token}"
    outputs: {said: {type: string}}
    mock: {outputs: {said: hi}}
  - id: bye
    agent: mock
    command: bye
    depends_on: [hello]
    mock: {outputs: {said: bye}}
"""

FLAKY = """
name: flaky
steps:
  - id: fetch
    agent: mock
    command: fetch
    mock: {outputs: {rows: 3}}
  - id: load
    agent: mock
    command: load
    depends_on: [fetch]
    mock: {fail_times: 9, error: "the store answered 503"}
  - id: report
    agent: mock
    command: report
    depends_on: [load]
"""

SLOW = """
name: slow
steps:
  - {id: sign_off, approval: required}
  - {id: after, agent: mock, command: after, depends_on: [sign_off]}
"""

PRINTS = """
name: prints
args:
  api_token: {type: string}
steps:
  - {id: show, agent: shell, command: "printf 'using %s' ${args.api_token}"}
"""


def call(client: Client, method: str, url: str, body=None, **headers):
    """A JSON request to the API; `body` a value (sent as JSON) or bytes (sent as they are)."""
    data = body if isinstance(body, (bytes, str)) else (None if body is None else json.dumps(body))
    extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()}
    return getattr(client, method.lower())(url, data=data, content_type="application/json", **extra)


def problem(response, status: int, slug: str | None = None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status and body["detail"]
    if slug is not None:
        assert body["type"].endswith("/" + slug)
    return body


def as_(client: Client, user) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def greet(save_workflow):
    return save_workflow(GREET)


@pytest.fixture
def done(greet, operator):
    """An ended run of greet, its argument that reads as a secret set."""
    return fast_forward(services.run_start(user=operator, version=greet, args={"who": "ann", "api_token": TOKEN}))


@pytest.fixture
def failed(save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(FLAKY)))
    assert run.status == "failed"
    return run


@pytest.fixture
def waiting(save_workflow, operator):
    return fast_forward(services.run_start(user=operator, version=save_workflow(SLOW)))


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


class TestDetail:
    def test_a_run_has_its_steps_as_the_run_view_shows_them(self, client, approver, failed):
        body = call(as_(client, approver), "get", f"/api/v1/runs/{failed.pk}").json()
        assert body["id"] == failed.pk and body["status"] == "failed"
        steps = {step["id"]: step for step in body["steps"]}
        assert list(steps) == ["fetch", "load", "report"]
        assert steps["fetch"]["status"] == "completed" and steps["fetch"]["attempt"] == 1
        assert steps["fetch"]["started_at"] and steps["fetch"]["seconds"] is not None
        assert steps["load"]["status"] == "failed" and "503" in steps["load"]["error"]
        assert steps["report"]["error_code"] == "upstream_failed" and steps["report"]["word"]

    def test_a_secret_argument_is_hidden_in_every_answer_about_the_run(self, client, approver, done):
        as_(client, approver)
        for url in (f"/api/v1/runs/{done.pk}", f"/api/v1/runs/{done.pk}/steps/hello/outputs",
                    f"/api/v1/runs/{done.pk}/steps/hello/log", f"/api/v1/runs/{done.pk}/steps/hello/attempts",
                    f"/api/v1/runs/{done.pk}/restart-plan?step=bye"):
            response = call(client, "get", url)
            assert response.status_code == 200, (url, response.content)
            assert TOKEN not in response.content.decode(), url
        given = call(client, "get", f"/api/v1/runs/{done.pk}/steps/hello/outputs").json()["given"]
        assert "[redacted]" in json.dumps(given)

    def test_a_secret_a_shell_step_printed_is_hidden_in_its_outputs_and_log(
            self, client, approver, operator, save_workflow, django_capture_on_commit_callbacks):
        with django_capture_on_commit_callbacks(execute=True):  # the shell step runs in the worker, on commit
            run = services.run_start(user=operator, version=save_workflow(PRINTS), args={"api_token": TOKEN})
        run = fast_forward(run)
        assert run.status == "completed"
        as_(client, approver)
        outputs = call(client, "get", f"/api/v1/runs/{run.pk}/steps/show/outputs").json()
        assert outputs["stdout"] == "using [redacted]"
        log = call(client, "get", f"/api/v1/runs/{run.pk}/steps/show/log").content.decode()
        assert "using [redacted]" in log and TOKEN not in log

    @pytest.mark.parametrize("url", ["/api/v1/runs/999999", "/api/v1/runs/abc", f"/api/v1/runs/{2**70}",
                                     "/api/v1/runs/-1", "/api/v1/runs/999999/steps/hello/log",
                                     "/api/v1/runs/DONE/steps/nope/attempts", "/api/v1/runs/DONE/steps/nope/outputs",
                                     "/api/v1/runs/DONE/steps/nope/log", "/api/v1/runs/DONE/restart-plan?step=nope"])
    def test_an_unknown_run_or_step_is_a_404_problem_to_who_may_see_runs(self, client, approver, done, url):
        problem(call(as_(client, approver), "get", url.replace("DONE", str(done.pk))), 404)

    @pytest.mark.parametrize("tail", ["", "/steps/hello/attempts", "/steps/hello/outputs", "/steps/hello/log",
                                      "/restart-plan?step=hello"])
    def test_an_outsider_is_refused_whether_or_not_the_run_exists(self, client, outsider, done, tail):
        as_(client, outsider)
        problem(call(client, "get", f"/api/v1/runs/{done.pk}{tail}"), 403, "forbidden")
        problem(call(client, "get", f"/api/v1/runs/999999{tail}"), 403, "forbidden")

    def test_reads_take_no_writes(self, client, approver, done):
        as_(client, approver)
        for tail in ("", "/steps/hello/attempts", "/steps/hello/outputs", "/steps/hello/log"):
            problem(call(client, "post", f"/api/v1/runs/{done.pk}{tail}", {}), 405)


class TestSteps:
    def test_a_steps_attempts_and_waits(self, client, approver, failed):
        body = call(as_(client, approver), "get", f"/api/v1/runs/{failed.pk}/steps/load/attempts").json()
        assert body["step"] == "load" and body["status"] == "failed"
        assert [a["number"] for a in body["attempts"]] == [1]
        assert body["attempts"][0]["status"] == "failed" and "503" in body["attempts"][0]["error"]
        assert body["attempts"][0]["started_at"] and body["attempts"][0]["seconds"] is not None

    def test_a_steps_outputs(self, client, approver, done):
        body = call(as_(client, approver), "get", f"/api/v1/runs/{done.pk}/steps/hello/outputs").json()
        assert (body["step"], body["status"], body["attempt"], body["outputs"]) == ("hello", "completed", 1,
                                                                                     {"said": "hi"})

    def test_a_steps_log_in_parts(self, client, approver, failed):
        as_(client, approver)
        whole = call(client, "get", f"/api/v1/runs/{failed.pk}/steps/load/log").json()
        assert whole["next"] is None and whole["entries"]
        assert {entry["step"] for entry in whole["entries"]} == {"load"}
        assert any("503" in entry["text"] and entry["level"] == "error" for entry in whole["entries"])
        parts, after = [], 0
        while after is not None:
            part = call(client, "get", f"/api/v1/runs/{failed.pk}/steps/load/log?limit=1&after={after}").json()
            parts += part["entries"]
            after = part["next"]
        assert parts == whole["entries"]
        errors = call(client, "get", f"/api/v1/runs/{failed.pk}/steps/load/log?level=error").json()["entries"]
        assert errors and {entry["level"] for entry in errors} == {"error"}

    @pytest.mark.parametrize("query", ["level=loud", "after=-1", "after=x", "limit=0", "limit=501",
                                       f"after={2**64}", "text=" + "x" * 201])
    def test_a_bad_log_query_is_a_400_problem(self, client, approver, done, query):
        problem(call(as_(client, approver), "get", f"/api/v1/runs/{done.pk}/steps/hello/log?{query}"), 400)


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

    def test_an_unknown_run_and_the_wrong_method(self, client, operator):
        as_(client, operator)
        problem(call(client, "post", "/api/v1/runs/999999/cancel", {}), 404)
        problem(call(client, "get", "/api/v1/runs/999999/cancel"), 405)


class TestRestart:
    def test_the_plan_then_the_restart_bound_to_it(self, client, operator, failed):
        as_(client, operator)
        plan = call(client, "get", f"/api/v1/runs/{failed.pk}/restart-plan?step=load").json()
        assert plan["rerun"] == ["load", "report"] and plan["carried"] == [{"step": "fetch", "outputs": {"rows": 3}}]
        assert plan["fingerprint"] == restart_plan(failed, "load").fingerprint and plan["may_restart"] is True
        response = call(client, "post", f"/api/v1/runs/{failed.pk}/restart",
                        {"step": "load", "plan": plan["fingerprint"]})
        assert response.status_code == 201, response.content
        new = Run.objects.get(pk=response.json()["id"])
        assert (new.restarted_from_id, new.restart_from_step) == (failed.pk, "load")
        assert response.json()["restarted_from"] == failed.pk
        assert AuditEvent.objects.filter(code=codes.RUN_RESTARTED, run_id=new.pk).count() == 1

    def test_a_plan_that_changed_since_is_a_409_stale_problem(self, client, operator, failed):
        response = call(as_(client, operator), "post", f"/api/v1/runs/{failed.pk}/restart",
                        {"step": "load", "plan": "0" * 32})
        body = problem(response, 409, "stale")
        assert body["code"] == "stale_plan"
        assert Run.objects.count() == 1

    def test_an_approver_reads_the_plan_but_may_not_restart(self, client, approver, failed):
        as_(client, approver)
        plan = call(client, "get", f"/api/v1/runs/{failed.pk}/restart-plan?step=load").json()
        assert plan["may_restart"] is False
        problem(call(client, "post", f"/api/v1/runs/{failed.pk}/restart", {"step": "load",
                                                                             "plan": plan["fingerprint"]}), 403)
        assert Run.objects.count() == 1

    @pytest.mark.parametrize("body, status", [
        ({"step": "load"}, 400), ({"plan": "x"}, 400), ({"step": 1, "plan": "x"}, 400),
        ({"step": "load", "plan": "x", "force": True}, 400), ({"step": "s" * 65, "plan": "x"}, 400),
        ({"step": "nope", "plan": "0" * 32}, 422)])
    def test_a_bad_body_restarts_nothing(self, client, operator, failed, body, status):
        problem(call(as_(client, operator), "post", f"/api/v1/runs/{failed.pk}/restart", body), status)
        assert Run.objects.count() == 1

    def test_a_run_still_going_is_not_restarted(self, client, operator, waiting):
        as_(client, operator)
        plan = call(client, "get", f"/api/v1/runs/{waiting.pk}/restart-plan?step=after").json()
        assert plan["may_restart"] is False
        problem(call(client, "post", f"/api/v1/runs/{waiting.pk}/restart",
                     {"step": "after", "plan": plan["fingerprint"]}), 409)
        assert Run.objects.count() == 1

    def test_the_plan_needs_a_step(self, client, operator, failed):
        problem(call(as_(client, operator), "get", f"/api/v1/runs/{failed.pk}/restart-plan"), 400)

    def test_outsiders_unknown_runs_and_wrong_methods(self, client, operator, outsider, failed):
        problem(call(as_(client, outsider), "post", f"/api/v1/runs/{failed.pk}/restart",
                     {"step": "load", "plan": "0" * 32}), 403)
        as_(client, operator)
        problem(call(client, "post", "/api/v1/runs/999999/restart", {"step": "load", "plan": "0" * 32}), 404)
        problem(call(client, "get", f"/api/v1/runs/{failed.pk}/restart"), 405)
        problem(call(client, "post", f"/api/v1/runs/{failed.pk}/restart-plan?step=load", {}), 405)
        assert Run.objects.count() == 1
