"""The API's reads of a run: the run with its steps, a step's attempts, outputs and log, each showing what the
console's run view and step panel show, secrets hidden as they hide them."""

from __future__ import annotations

import json

import pytest

from forge.runs import services
from tests.forge.api.runs_api import (  # noqa: F401 - fixtures
    PRINTS, TOKEN, as_, call, done, failed, greet, problem)
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db


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
