"""GET /api/v1/runs/{id}/report: the run's report as `python -m engine run --json` prints it and the `forge`
command prints it in both modes (status `paused` when only a person can move the run on), every argument that
reads as a secret hidden as the run view hides it; read by whoever may see runs, as the run's other reads."""

from __future__ import annotations

import json

import pytest

from forge.api.serializers_runs import RunReportOut
from forge.runs import services
from forge.runs.reads.report import shown_report
from tests.forge.api.calls import with_token
from tests.forge.api.runs_api import (  # noqa: F401 - fixtures
    PRINTS, TOKEN, as_, call, done, failed, greet, problem, waiting)
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db

SHORT = "xyz"  # too short to be replaced in every text (secret_args.MIN_LENGTH), so hidden by its name alone
GUARDED = """
name: guarded
args:
  password: {type: string, required: true}
  who: {type: string, default: ann}
steps:
  - {id: greet, agent: mock, command: "hello ${args.who}", mock: {outputs: {said: hi}}}
"""
ASKS = """
name: asks
steps:
  - id: ask
    agent: mock
    command: "question ${loop.iteration}"
    loop: {max_iterations: 3, gate: reply}
    mock: {sequence: [{outputs: {q: 1}}, {outputs: {q: 2}}]}
"""


def report_of(client, run) -> dict:
    response = call(client, "get", f"/api/v1/runs/{run.pk}/report")
    assert response.status_code == 200, response.content
    return response.json()


class TestReport:
    def test_an_ended_run_reports_its_steps_outputs_and_variables(self, client, approver, done):
        report = report_of(as_(client, approver), done)
        assert (report["status"], report["error"], report["error_code"]) == ("completed", None, None)
        assert report["layers"] == [["hello"], ["bye"]] and report["dispatch_order"] == ["hello", "bye"]
        assert report["steps"]["hello"] == {"status": "completed", "attempts": 1, "outputs": {"said": "hi"},
                                            "stdout": '{"said": "hi"}', "error": None, "error_code": None,
                                            "iterations": 0}
        assert report["variables"]["who"] == "ann" and report["variables"]["times"] == 1
        assert report["approvals"] == []

    def test_a_failed_run_says_which_step_failed_and_why(self, client, approver, failed):
        report = report_of(as_(client, approver), failed)
        assert report["status"] == "failed"
        assert report["steps"]["load"]["status"] == "failed" and "503" in report["steps"]["load"]["error"]
        assert report["steps"]["report"]["error_code"] == "upstream_failed"

    def test_a_run_waiting_for_a_decision_is_paused(self, client, approver, waiting):
        report = report_of(as_(client, approver), waiting)
        assert report["status"] == "paused"
        assert report["approvals"] == [{"step": "sign_off", "kind": "approval", "status": "pending",
                                        "decision": None}]

    def test_a_loop_step_lists_its_calls(self, client, approver, operator, save_workflow):
        run = fast_forward(services.run_start(user=operator, version=save_workflow(ASKS)))
        report = report_of(as_(client, approver), run)
        assert report["status"] == "paused" and report["steps"]["ask"]["history"] == ["ask_iter_1"]
        assert report["approvals"][0]["kind"] == "reply"

    def test_the_answer_is_the_report_the_local_mode_prints_and_its_schema_describes_it(
            self, client, approver, done, waiting, operator, save_workflow):
        looping = fast_forward(services.run_start(user=operator, version=save_workflow(ASKS)))
        for run in (done, waiting, looping):
            answered = report_of(as_(client, approver), run)
            assert answered == shown_report(run)
            assert RunReportOut(answered).data == answered  # every field as the OpenAPI document says

    def test_a_token_with_runs_read_reads_it(self, approver, done):
        response = with_token(approver, "runs:read").get(f"/api/v1/runs/{done.pk}/report")
        assert response.status_code == 200 and response.json()["status"] == "completed"


class TestSecrets:
    def test_a_secret_argument_is_hidden_wherever_it_would_show(self, client, approver, done):
        response = call(as_(client, approver), "get", f"/api/v1/runs/{done.pk}/report")
        assert TOKEN not in response.content.decode()
        assert response.json()["variables"]["api_token"] == "[redacted]"

    def test_a_secret_a_shell_step_printed_is_hidden(self, client, approver, operator, save_workflow,
                                                      django_capture_on_commit_callbacks):
        with django_capture_on_commit_callbacks(execute=True):  # the shell step runs in the worker, on commit
            run = services.run_start(user=operator, version=save_workflow(PRINTS), args={"api_token": TOKEN})
        run = fast_forward(run)
        response = call(as_(client, approver), "get", f"/api/v1/runs/{run.pk}/report")
        assert response.json()["steps"]["show"]["stdout"] == "using [redacted]"
        assert TOKEN not in response.content.decode()

    def test_a_short_secret_argument_is_shown_as_the_runs_header_shows_it(self, client, approver, operator,
                                                                          save_workflow):
        run = fast_forward(services.run_start(user=operator, version=save_workflow(GUARDED),
                                              args={"password": SHORT}))
        as_(client, approver)
        report = call(client, "get", f"/api/v1/runs/{run.pk}/report").json()
        header = call(client, "get", f"/api/v1/runs/{run.pk}").json()["args"]
        assert report["variables"] == {"password": "[redacted]", "who": "ann", "said": "hi"}
        assert header["password"] == "[redacted]"


class TestRefusals:
    @pytest.mark.parametrize("pk", ["999999", "0", "abc", "-1", str(2**70)])
    def test_an_unknown_run_is_a_404_problem(self, client, approver, pk):
        problem(call(as_(client, approver), "get", f"/api/v1/runs/{pk}/report"), 404)

    def test_an_unknown_run_says_so(self, client, approver):
        body = problem(call(as_(client, approver), "get", "/api/v1/runs/999999/report"), 404, "not-found")
        assert (body["code"], body["detail"]) == ("no_such_run", "There is no run 999999.")

    def test_who_may_see_no_runs_is_refused_whether_or_not_the_run_exists(self, client, outsider, done):
        as_(client, outsider)
        for pk in (done.pk, 999999):
            problem(call(client, "get", f"/api/v1/runs/{pk}/report"), 403, "forbidden")

    def test_no_one_signed_in_is_refused(self, client, done):
        problem(call(client, "get", f"/api/v1/runs/{done.pk}/report"), 401)

    def test_a_token_without_runs_read_is_refused_for_its_scope(self, approver, done):
        response = with_token(approver, "audit:read").get(f"/api/v1/runs/{done.pk}/report")
        body = problem(response, 403, "scope-missing")
        assert TOKEN not in json.dumps(body)

    def test_it_takes_no_writes(self, client, approver, done):
        for method in ("post", "put", "patch", "delete"):
            problem(call(as_(client, approver), method, f"/api/v1/runs/{done.pk}/report", {}), 405)
