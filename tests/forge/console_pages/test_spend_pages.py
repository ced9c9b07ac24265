"""Spend as the console shows it: the dashboard's month (cost, tokens with their input/output split) and each
gateway's measured health; the Spend page grouping cost and tokens by workflow, agent, model and month over a
range of months, each bound valid of its kind taken, anything else said on the page (a 400, no figures)."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from forge.console.filters import Filters
from forge.governance.models import Gateway, TokenEvent

pytestmark = pytest.mark.django_db


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def call(at: datetime, *, workflow="nightly", agent="writer", model="big-model", cost=0.5, tokens=1500,
         input_tokens=1000, output_tokens=500):
    TokenEvent.objects.create(at=at, run_id=1, step="s", attempt=TokenEvent.objects.count() + 1, agent=agent,
                              workflow=workflow, model=model, cost=cost, tokens=tokens, input_tokens=input_tokens,
                              output_tokens=output_tokens)


def card(html: str, card_id: str) -> str:
    return text(re.search(rf'<section [^>]*id="{card_id}".*?</section>', html, re.S).group(0))


@pytest.fixture
def ledger():
    call(datetime(2026, 9, 3, tzinfo=UTC))
    call(datetime(2026, 10, 1, tzinfo=UTC), agent="reviewer", model="small-model", cost=0.25, tokens=300,
         input_tokens=200, output_tokens=100)
    call(datetime(2026, 10, 31, 23, 59, 59, tzinfo=UTC), workflow="weekly", cost=2.0, tokens=10_000,
         input_tokens=8000, output_tokens=2000)
    call(datetime(2026, 11, 2, tzinfo=UTC), workflow="weekly", agent="shell", model="", cost=0.0, tokens=0,
         input_tokens=0, output_tokens=0)
    call(datetime(2026, 11, 5, tzinfo=UTC), agent="old", model="", cost=0.125, tokens=700, input_tokens=0,
         output_tokens=0)  # an agent that never said its split


# -- the dashboard ----------------------------------------------------------------------------------------------

def test_the_dashboard_shows_this_months_spend_with_its_token_split(client, operator):
    now = timezone.now()
    call(now - timedelta(days=40))  # last month's: not counted
    call(now, cost=0.006, tokens=1500, input_tokens=1200, output_tokens=300)
    call(now, agent="reviewer", cost=0.01, tokens=500, input_tokens=100, output_tokens=400)
    client.force_login(operator)
    said = card(client.get(reverse("console:dashboard")).content.decode(), "board-spend")
    assert "0.016 on 2 calls" in said and "2,000 tokens: 1,300 input, 700 output" in said
    assert "Spend by workflow, agent and month" in said


def test_the_dashboard_shows_each_gateways_health(client, approver):
    checked = timezone.now() - timedelta(minutes=3)
    Gateway.objects.create(name="gw-east", healthy=False, checked_at=checked, failures=3,
                           last_error="connection refused (127.0.0.1:9)", capabilities=["gpu"])
    Gateway.objects.create(name="gw-west", healthy=True, checked_at=checked, capabilities=["gpu", "docs"])
    Gateway.objects.create(name="gw-new")
    Gateway.objects.create(name="gw-just-probed", checked_at=timezone.now() - timedelta(seconds=20))
    client.force_login(approver)
    html = client.get(reverse("console:dashboard")).content.decode()
    east = text(re.search(r'<div class="gateway" data-gateway="gw-east">.*?</div>', html, re.S).group(0))
    assert east.startswith("unhealthy gw-east checked 3") and "minutes ago · covers gpu" in east
    assert "last error (3 failures in a row): connection refused (127.0.0.1:9)" in east
    west = text(re.search(r'<div class="gateway" data-gateway="gw-west">.*?</div>', html, re.S).group(0))
    assert west.startswith("healthy gw-west checked") and "covers gpu, docs" in west and "last error" not in west
    assert "healthy gw-new never checked" in text(html)
    assert re.search(r"healthy gw-just-probed checked 2\d s ago", text(html))  # not "0 minutes ago"


def test_a_dashboard_without_gateways_or_calls_says_so(client, operator):
    client.force_login(operator)
    html = client.get(reverse("console:dashboard")).content.decode()
    assert "No gateway is set" in html and "0.00 on 0 calls" in card(html, "board-spend")


# -- the Spend page ---------------------------------------------------------------------------------------------

def rows(html: str, by: str) -> dict[str, str]:
    found = re.findall(rf'<tr data-{by}="([^"]*)">(.*?)</tr>', html, re.S)
    return {label: text(row) for label, row in found}


@pytest.mark.parametrize("role", ["operator", "approver", "admin_user"])
def test_every_role_that_sees_the_dashboard_sees_the_spend_page_and_its_link(client, ledger, role, request):
    client.force_login(request.getfixturevalue(role))
    assert 'href="/spend/"' in client.get(reverse("console:dashboard")).content.decode()
    assert client.get(reverse("console:spend")).status_code == 200


def test_an_outsider_is_refused(client, ledger, outsider):
    client.force_login(outsider)
    assert client.get(reverse("console:spend")).status_code == 403


def test_spend_is_grouped_by_workflow_agent_model_and_month(client, ledger, operator):
    client.force_login(operator)
    html = client.get(reverse("console:spend")).content.decode()
    assert "2.875 spent on 5 calls: 9,200 input + 2,600 output = 12,500 tokens." in text(html)
    workflows = rows(html, "workflow")
    assert list(workflows) == ["weekly", "nightly"]  # the largest first
    assert workflows["weekly"] == "weekly 2.00 8,000 2,000 10,000 2"
    assert workflows["nightly"] == "nightly 0.875 1,200 600 2,500 3"
    agents = rows(html, "agent")
    assert list(agents) == ["writer", "reviewer", "old", "shell"]
    assert agents["old"] == "old 0.125 0 0 700 1"
    models = rows(html, "model")
    assert models["big-model"] == "big-model 2.50 9,000 2,500 11,500 2"
    assert models[""] == "not reported 0.125 0 0 700 2"
    assert rows(html, "month") == {"2026-11": "2026-11 0.125 0 0 700 2", "2026-10": "2026-10 2.25 8,200 2,100 10,300 2",
                                   "2026-09": "2026-09 0.50 1,000 500 1,500 1"}


@pytest.mark.parametrize("query, months, total", [
    ({"from": "2026-10"}, ["2026-11", "2026-10"], "2.375 spent on 4 calls"),
    ({"to": "2026-10"}, ["2026-10", "2026-09"], "2.75 spent on 3 calls"),  # the last moment of October included
    ({"from": "2026-10", "to": "2026-10"}, ["2026-10"], "2.25 spent on 2 calls"),
    ({"from": "0001-01", "to": "9999-12"}, ["2026-11", "2026-10", "2026-09"], "2.875 spent on 5 calls"),
    ({"from": "2027-01"}, [], "0.00 spent on 0 calls"),
    ({"from": "", "to": ""}, ["2026-11", "2026-10", "2026-09"], "2.875 spent on 5 calls"),
])
def test_a_range_of_months_keeps_the_calls_inside_it(client, ledger, operator, query, months, total):
    client.force_login(operator)
    page = client.get(reverse("console:spend"), query)
    html = page.content.decode()
    assert page.status_code == 200 and list(rows(html, "month")) == months and total in text(html)


@pytest.mark.parametrize("query, says", [
    ({"from": "2026-13"}, "from must be a month written YYYY-MM"),
    ({"to": "2026-00"}, "to must be a month written YYYY-MM"),
    ({"from": "0000-01"}, "from must be a month written YYYY-MM"),
    ({"from": "2026-1"}, "from must be a month written YYYY-MM"),
    ({"to": "2026-10-01"}, "to must be a month written YYYY-MM"),
    ({"from": "٢٠٢٦-١٠"}, "from must be a month written YYYY-MM"),
    ({"from": "<script>alert(1)</script>"}, "from must be a month written YYYY-MM"),
    ({"from": "9" * 5000}, "from must be a month written YYYY-MM"),
    ({"from": "2026-11", "to": "2026-10"}, "from must be a month on or before to"),
])
def test_a_month_that_means_nothing_is_said_on_the_page_and_no_figure_shown(client, ledger, operator, query, says):
    client.force_login(operator)
    page = client.get(reverse("console:spend"), query)
    html = page.content.decode()
    assert page.status_code == 400 and says in html and "<script>alert" not in html
    assert "spent on" not in html and not rows(html, "month")


@pytest.mark.parametrize("raw, end, moment", [
    ("2026-02", False, datetime(2026, 2, 1, tzinfo=UTC)), ("2026-02", True, datetime(2026, 3, 1, tzinfo=UTC)),
    ("2026-12", True, datetime(2027, 1, 1, tzinfo=UTC)), ("0001-01", False, datetime(1, 1, 1, tzinfo=UTC)),
    ("9999-12", True, None), ("", False, None)])
def test_a_month_bound_is_the_first_moment_of_its_month_or_the_one_after(raw, end, moment):
    given = Filters({"m": raw})
    assert given.month("m", end=end) == moment and not given.problems


# -- a grouping with more groups than a page shows ---------------------------------------------------------------

HOSTILE = ("<script>alert(1)</script>" + "x" * 128)[:128]  # a model name a gateway chose: 128 printable chars


def test_a_gateway_naming_a_new_model_per_call_shows_the_top_twenty_and_one_row_summing_the_rest(client, operator):
    at = datetime(2026, 11, 2, tzinfo=UTC)
    names = [f"m-{i:03d}" for i in range(499)] + [HOSTILE]  # model i costs (i + 1) quarters: the last the costliest
    TokenEvent.objects.bulk_create(
        [TokenEvent(at=at, run_id=1, step="s", attempt=i, agent="writer", workflow="nightly", model=name,
                    cost=(i + 1) * 0.25, tokens=(i + 1) * 10, input_tokens=(i + 1) * 6, output_tokens=(i + 1) * 4)
         for i, name in enumerate(names)]
        + [TokenEvent(at=at, run_id=1, step="s", attempt=500, agent="writer", workflow="nightly", model="m-000",
                      cost=0.0, tokens=5)])  # a second call of the cheapest model, which never said its split
    client.force_login(operator)
    html = client.get(reverse("console:spend")).content.decode()
    assert "31312.50 spent on 501 calls" in text(html)  # the total counts every call, shown or summed
    models = rows(html, "model")
    assert len(models) == 20 and list(models)[1:] == [f"m-{i:03d}" for i in range(498, 479, -1)]
    assert "<script>alert" not in html and models["&lt;script&gt;alert(1)&lt;/script&gt;" + "x" * 103].endswith(
        "125.00 3,000 2,000 5,000 1")
    others = re.findall(r'<tr class="spend-others" data-model-others="(\d+)">(.*?)</tr>', html, re.S)
    # the 480 cheapest models: quarters 1..480 (28,860.00), tokens 10 each quarter and the 5 unsplit, 481 calls
    assert [(n, text(row)) for n, row in others] == [("480", "480 others 28860.00 692,640 461,760 1,154,405 481")]
    assert list(rows(html, "workflow")) == ["nightly"] and 'data-workflow-others' not in html  # one workflow


@pytest.mark.parametrize("agents, said", [(20, None), (21, "1 other 0.00 0 0 0 1"), (22, "2 others 0.00 0 0 0 2")])
def test_a_grouping_sums_only_the_groups_past_the_top_twenty(client, operator, agents, said):
    at = datetime(2026, 11, 2, tzinfo=UTC)
    TokenEvent.objects.bulk_create([
        TokenEvent(at=at, run_id=1, step="s", attempt=i, agent=f"a-{i:02d}", workflow="nightly",
                   cost=1.0 if i < 20 else 0.0, tokens=1 if i < 20 else 0) for i in range(agents)])
    client.force_login(operator)
    html = client.get(reverse("console:spend")).content.decode()
    assert list(rows(html, "agent")) == [f"a-{i:02d}" for i in range(20)]  # a tie is ordered by name
    found = re.search(r'<tr class="spend-others" data-agent-others="\d+">(.*?)</tr>', html, re.S)
    assert (text(found.group(1)) if found else None) == said
