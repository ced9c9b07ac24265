"""The dashboard's read model (forge/runs/reads/dashboard.py), as any client reads it: the runs a person may see
counted per day by how they stand, the success rate of those that ended, the workflows that failed this week,
the runs in flight, the budgets' figures, and who may switch schedules off. The console's drawing of it is
tested through the page (tests/forge/console_pages/test_dashboard_over_time.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from forge.governance.models import BudgetEnvelope
from forge.runs import services
from forge.runs.models import Run
from forge.runs.reads.dashboard import DAYS, RECENT, board_for
from tests.forge.conftest import fast_forward, member
from tests.forge.console_pages.conftest import APPROVAL
from tests.forge.console_pages.test_dashboard_over_time import days_ago
from tests.forge.console_pages.test_runs_list import FAILS, QUICK

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(save_workflow, operator):
    quick, fails = save_workflow(QUICK), save_workflow(FAILS)
    made = {"waiting": fast_forward(services.run_start(user=operator, version=save_workflow(APPROVAL)))}
    for name, version, days in (("done_today", quick, 0), ("done_2", quick, 2), ("failed_2", fails, 2),
                                ("failed_3", fails, 3), ("failed_9", fails, 9), ("failed_old", fails, 20),
                                ("done_13", quick, 13)):
        made[name] = fast_forward(services.run_start(user=operator, version=version))
        days_ago(made[name], days, hours=0)
    return made


def counts(board, days_back: int) -> dict[str, int]:
    return board.per_day.days[DAYS - 1 - days_back].counts


def test_runs_are_counted_per_day_by_how_they_stand(operator, history):
    board = board_for(operator)
    days = board.per_day.days
    today = timezone.now().date()
    assert [d.day for d in days] == [today - timedelta(days=n) for n in range(DAYS - 1, -1, -1)]
    assert counts(board, 0) == {"completed": 1, "in_flight": 1}
    assert counts(board, 2) == {"completed": 1, "failed": 1}
    assert counts(board, 3) == {"failed": 1} and counts(board, 9) == {"failed": 1}
    assert counts(board, 13) == {"completed": 1} and counts(board, 1) == {}
    assert sum(d.total for d in days) == 7  # the run 20 days ago is outside the DAYS
    # ended: 3 completed, 3 failed (the waiting run has not ended)
    assert (board.per_day.ended, board.per_day.completed, board.per_day.success_pct) == (6, 3, 50)


def test_the_workflows_that_failed_this_week_latest_failure_first(operator, history, save_workflow):
    board = board_for(operator)
    assert [(w.name, w.failures, w.last_run.pk) for w in board.failing] == [("fails", 2, history["failed_2"].pk)]
    assert board.failing[0].last_at == Run.objects.get(pk=history["failed_2"].pk).finished_at


def test_in_flight_are_the_unfinished_runs_newest_first_and_bounded(operator, save_workflow, history):
    version = save_workflow(QUICK)
    started = [services.run_start(user=operator, version=version) for _ in range(RECENT + 2)]  # pending: not advanced
    board = board_for(operator)
    assert [r.pk for r in board.in_flight] == [r.pk for r in reversed(started)][:RECENT]
    assert history["waiting"].pk not in [r.pk for r in board.in_flight]  # the older ones fall past RECENT
    assert history["done_today"].pk not in [r.pk for r in board_for(operator).in_flight]


def test_approvals_are_the_person_s_to_decide(approver, operator, history):
    assert [a.run_id for a in board_for(approver).approvals] == [history["waiting"].pk]
    assert board_for(operator).approvals == []  # an Operator decides none


def test_someone_in_no_group_sees_no_run_of_anyone(history):
    stranger = member("sam")
    board = board_for(stranger)
    assert board.in_flight == [] and board.failing == [] and board.approvals == []
    assert all(d.total == 0 for d in board.per_day.days) and board.per_day.success_pct is None
    assert board.may_switch is False


def test_budgets_and_who_may_switch_schedules_off(operator, admin_user):
    BudgetEnvelope.objects.create(name="team", scope="org", limit=10, enabled=True)
    BudgetEnvelope.objects.create(name="off", scope="org", limit=10, enabled=False)
    board = board_for(operator)
    assert [(b.name, b.limit, b.spent, b.reserved, b.used_up) for b in board.budgets] == [
        ("team", 10.0, 0.0, 0.0, False)]
    assert board.month.calls == 0 and board.may_switch is False
    assert board_for(admin_user).may_switch is True
