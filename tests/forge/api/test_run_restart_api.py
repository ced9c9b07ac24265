"""The API's restart: the plan, and the restart bound to the plan's fingerprint (a changed plan is a 409 stale
problem, as the console's restart refuses it: both go through run_restart)."""

from __future__ import annotations

import pytest

from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.runs.models import Run
from forge.runs.restart_plan import restart_plan
from tests.forge.api.runs_api import (  # noqa: F401 - fixtures
    as_, call, failed, problem, waiting)

pytestmark = pytest.mark.django_db


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
