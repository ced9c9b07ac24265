"""The dashboard over time (issue 17, point 27): runs per day for 14 days drawn by status (SVG with classes,
no style=""), the success rate of the runs that ended, and the workflows that failed recently with when;
the cards about one's own work stay."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from forge.runs import services
from forge.runs.models import Run
from tests.forge.conftest import fast_forward
from tests.forge.console_pages.test_runs_list import FAILS, QUICK

pytestmark = pytest.mark.django_db


def days_ago(run, days: int, *, hours: int = 0):
    at = timezone.now() - timedelta(days=days, hours=hours)
    finished = at + timedelta(minutes=1) if run.finished else None
    Run.objects.filter(pk=run.pk).update(created_at=at, started_at=at, finished_at=finished)


def day_of(html: str, days: int) -> str:
    day = (timezone.now() - timedelta(days=days)).date().isoformat()
    return re.search(rf'<g data-day="{day}">.*?</g>', html, re.S).group(0)


@pytest.fixture
def history(save_workflow, operator, run):
    quick, fails = save_workflow(QUICK), save_workflow(FAILS)
    made = {"today_waiting": run}
    for name, version, days in (("done_today", quick, 0), ("done_2", quick, 2), ("failed_2", fails, 2),
                                ("failed_3", fails, 3), ("failed_old", fails, 20), ("done_13", quick, 13)):
        made[name] = fast_forward(services.run_start(user=operator, version=version))
        days_ago(made[name], days)
    return made


def test_runs_per_day_are_drawn_by_status_for_fourteen_days(client, operator, history):
    client.force_login(operator)
    html = client.get(reverse("console:dashboard")).content.decode()
    assert len(re.findall(r'<g data-day="', html)) == 14
    today, two, three = day_of(html, 0), day_of(html, 2), day_of(html, 3)
    assert today.count('class="completed"') == 1 and today.count('class="in_flight"') == 1
    assert "1 completed, 1 in flight" in today
    assert two.count('class="completed"') == 1 and two.count('class="failed"') == 1
    assert "1 completed, 1 failed" in two
    assert "1 failed" in three and 'class="completed"' not in three
    assert "no run" in day_of(html, 1) and "<rect" not in day_of(html, 1)
    assert "20" not in re.findall(r'data-day="([\d-]+)"', html)  # the run 20 days ago is not drawn
    assert 'style="' not in html  # the policy refuses inline styles: lengths are SVG attributes
    # The busiest day's bar is the tallest: each bar is drawn to the same scale.
    heights = [float(h) for h in re.findall(r'<rect class="\w+" x="[\d.]+%" y="[\d.]+" width="4.286%" '
                                            r'height="([\d.]+)"', today)]
    assert sum(heights) == pytest.approx(106, abs=0.1)


def test_the_success_rate_is_of_the_runs_that_ended_in_those_days(client, operator, history):
    client.force_login(operator)
    html = client.get(reverse("console:dashboard")).content.decode()
    # ended in 14 days: done_today, done_2, done_13 completed; failed_2, failed_3 failed (failed_old is too old)
    assert '<span class="rate" data-field="success-rate">60%</span> succeeded' in html
    assert "3 of the 5 runs that ended completed." in html


def test_with_no_run_ended_the_rate_says_so(client, operator):
    client.force_login(operator)
    html = client.get(reverse("console:dashboard")).content.decode()
    assert '<span class="rate" data-field="success-rate">–</span>' in html and "No run ended in these 14 days." in html


def test_the_workflows_that_failed_this_week_are_listed_with_their_last_failure(client, operator, history):
    client.force_login(operator)
    html = client.get(reverse("console:dashboard")).content.decode()
    line = re.search(r'<p data-failing="fails">.*?</p>', html, re.S).group(0)
    assert "2 runs, last" in line and f'href="/runs/{history["failed_2"].pk}/"' in line
    last = Run.objects.get(pk=history["failed_2"].pk).finished_at
    assert f'title="{last:%Y-%m-%d %H:%M:%S} UTC">1\xa0day, 23\xa0hours ago</time>' in line
    assert "quick" not in re.findall(r'data-failing="(\w+)"', html)


def test_the_cards_about_one_s_own_work_stay(client, approver, history):
    client.force_login(approver)
    html = client.get(reverse("console:dashboard")).content.decode()
    assert "Runs in flight" in html and f'href="/runs/{history["today_waiting"].pk}/"' in html
    waiting = re.search(r'id="board-approvals".*?</section>', html, re.S).group(0)
    assert "ship it?" in waiting


def test_the_dashboard_s_parts_are_live(client, operator):
    client.force_login(operator)
    html = client.get(reverse("console:dashboard")).content.decode()
    for part in ("board-in-flight", "board-approvals", "board-failures", "board-days"):
        assert re.search(rf'id="{part}" hx-swap-oob="true"', html), part
    assert 'ws-connect="/ws/live/?topics=runs,approvals"' in html
