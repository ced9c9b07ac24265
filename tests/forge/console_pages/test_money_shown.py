"""Money with the precision it has (issue 17, point 9): a limit of 0.006 reads 0.006, not 0.01; an envelope at
or over its limit is marked on the dashboard; the Run form says before starting that a budget would refuse
the run, by the same check that refuses a schedule's run."""

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from engine.money import money_text
from forge.runs.reads.stream import snapshot_if_too_far
from forge.governance.models import BudgetEnvelope, TokenEvent
from forge.runs import services
from forge.runs.models import RunEvent, StepResult
from tests.forge.conftest import fast_forward
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("value, text", [
    (0.006, "0.006"), (0.016, "0.016"), (5, "5.00"), (0, "0.00"), (0.1 + 0.2, "0.30"), (1234.5, "1234.50"),
    (12.345678912, "12.34567891"), (1e-12, "0.00"), (-0.5, "-0.50"), (1e15, "1000000000000000.00"),
])
def test_money_is_written_with_the_precision_it_has(value, text):
    assert money_text(value) == text


def spend(amount: float, workflow: str = "needs_a_yes", reserved: float = 0.0) -> None:
    TokenEvent.objects.create(run_id=999, step="s", attempt=TokenEvent.objects.count() + 1, agent="mock",
                              workflow=workflow, cost=amount, reserved=reserved, settled=not reserved,
                              at=timezone.now())


def budget_of(page, name: str) -> str:
    return re.search(rf'<div class="budget[^"]*" data-budget="{name}">.*?</div>', page.content.decode(), re.S).group(0)


def test_the_dashboard_shows_each_figure_whole_and_marks_a_budget_at_or_over_its_limit(client, operator):
    BudgetEnvelope.objects.create(name="tiny", scope="workflow:needs_a_yes", limit=0.006)
    BudgetEnvelope.objects.create(name="roomy", scope="workflow:other", limit=10)
    BudgetEnvelope.objects.create(name="org", scope="org", limit=0.3)
    spend(0.016)
    spend(0.25, workflow="other")
    client.force_login(operator)
    page = client.get(reverse("console:dashboard"))
    tiny, roomy, org = budget_of(page, "tiny"), budget_of(page, "roomy"), budget_of(page, "org")
    assert "0.016 spent, 0.00 reserved of 0.006" in tiny and 'class="budget over"' in tiny and "limit reached" in tiny
    assert "0.25 spent, 0.00 reserved of 10.00" in roomy and 'class="budget"' in roomy and "limit reached" not in roomy
    assert "0.266 spent, 0.00 reserved of 0.30" in org and "limit reached" not in org


def test_a_budget_exactly_at_its_limit_counting_reservations_is_marked(client, operator):
    BudgetEnvelope.objects.create(name="exact", scope="org", limit=0.5)
    spend(0.2, reserved=0.3)
    client.force_login(operator)
    assert 'class="budget over"' in budget_of(client.get(reverse("console:dashboard")), "exact")


def test_the_run_form_says_a_used_up_budget_would_refuse_the_run(client, operator, save_workflow):
    save_workflow(APPROVAL)
    client.force_login(operator)
    url = reverse("console:workflow", args=["needs_a_yes"])
    assert 'id="budget-refusal"' not in client.get(url).content.decode()
    BudgetEnvelope.objects.create(name="tiny", scope="workflow:needs_a_yes", limit=0.006)
    spend(0.003)
    assert 'id="budget-refusal"' not in client.get(url).content.decode()  # some room left
    spend(0.003)
    html = client.get(url).content.decode()
    assert "A run would be refused now: budget &#x27;tiny&#x27; (workflow:needs_a_yes) has used 0.006 of its " \
           "0.006 limit this month" in html
    BudgetEnvelope.objects.filter(name="tiny").update(enabled=False)
    assert 'id="budget-refusal"' not in client.get(url).content.decode()


def test_another_workflow_s_budget_does_not_warn(client, operator, save_workflow):
    save_workflow(APPROVAL)
    BudgetEnvelope.objects.create(name="theirs", scope="workflow:other", limit=0.006)
    spend(1, workflow="other")
    client.force_login(operator)
    assert 'id="budget-refusal"' not in client.get(reverse("console:workflow", args=["needs_a_yes"])).content.decode()


def test_the_step_panel_shows_a_step_s_cost_whole(client, operator, run):
    StepResult.objects.filter(run=run, step="prepare").update(cost=0.00612)
    client.force_login(operator)
    html = client.get(reverse("console:step", args=[run.pk, "prepare"])).content.decode()
    assert "cost 0.00612" in html


PRICED = """
name: priced
steps:
  - {id: priced, agent: mock, command: go, mock: {cost: 0.006}}
  - {id: free, agent: mock, command: go, depends_on: [priced]}
"""


def test_the_steps_table_its_step_events_and_a_snapshot_write_a_cost_with_its_precision(
        client, operator, save_workflow, settings):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(PRICED)))
    client.force_login(operator)
    html = client.get(reverse("console:run", args=[run.pk])).content.decode()
    cells = dict(re.findall(r'<tr data-step="(\w+)".*?<td data-field="cost">([^<]*)</td>', html, re.S))
    assert cells == {"priced": "0.006", "free": "0.00"}
    # The page shows what the events say (run.js formats no money): the one writer is engine/money.
    said = [e.data.get("cost_text") for e in RunEvent.objects.filter(run=run, kind="step", step="priced").order_by("id")]
    assert said[-1] == "0.006" and all(isinstance(text, str) for text in said)
    settings.FORGE_LIVE_REPLAY_MAX = 1
    assert snapshot_if_too_far(run.pk, 0)["steps"]["priced"]["cost_text"] == "0.006"
