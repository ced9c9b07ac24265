"""RunFilter: each filter of a list of runs keeps the runs it names, the sort orders them, and the console's runs
page lists exactly the runs `filtered` gives the API for the same query string."""

import re
from datetime import datetime, timezone

import pytest
from django.urls import reverse

from forge.errors import BadRequest
from forge.filters import filtered
from forge.runs import services
from forge.runs.filters import RunFilter
from forge.runs.models import Run
from forge.runs.selectors import runs_for_user

pytestmark = pytest.mark.django_db

ONE = "name: {name}\nsteps:\n  - {{id: a, agent: mock, command: a, mock: {{outputs: {{ok: true}}}}}}\n"


@pytest.fixture
def runs(save_workflow, operator, admin_user):
    """Three runs: alpha by olive of 2001-06-01, beta by olive of 2001-06-02 (failed), alpha by adam today."""
    alpha, beta = save_workflow(ONE.format(name="alpha")), save_workflow(ONE.format(name="beta"))
    made = [services.run_start(user=operator, version=alpha), services.run_start(user=operator, version=beta),
            services.run_start(user=admin_user, version=alpha)]
    Run.objects.filter(pk=made[0].pk).update(created_at=datetime(2001, 6, 1, 11, 30, tzinfo=timezone.utc))
    Run.objects.filter(pk=made[1].pk).update(created_at=datetime(2001, 6, 2, 9, 0, tzinfo=timezone.utc),
                                             status="failed")
    return made


def ids(query, runs) -> list[int]:
    """The ids `filtered` gives, as positions in `runs` (0, 1, 2), in its order."""
    order = {run.pk: i for i, run in enumerate(runs)}
    return [order[pk] for pk in filtered(RunFilter, query, Run.objects.all()).values_list("pk", flat=True)]


@pytest.mark.parametrize("query, kept", [
    ({}, [2, 1, 0]),
    ({"status": "failed"}, [1]), ({"status": "pending"}, [2, 0]), ({"status": "cancelled"}, []),
    ({"workflow": "alpha"}, [2, 0]), ({"workflow": "alph"}, []), ({"workflow": "%"}, []),
    ({"started_by": "olive"}, [1, 0]), ({"started_by": "adam"}, [2]), ({"started_by": "'; drop table x; --"}, []),
    ({"since": "2001-06-02"}, [2, 1]), ({"until": "2001-06-01"}, [0]),
    ({"since": "2001-06-01T11:30", "until": "2001-06-02T09:00Z"}, [1, 0]),
    ({"until": "2001-06-01T13:29+02:00"}, []), ({"until": "2001-06-01T13:30+02:00"}, [0]),
    ({"sort": "id"}, [0, 1, 2]), ({"sort": "created"}, [0, 1, 2]), ({"sort": "-created"}, [2, 1, 0]),
    ({"sort": "workflow"}, [2, 0, 1]), ({"sort": "-workflow"}, [1, 2, 0]), ({"sort": "status"}, [1, 2, 0]),
    ({"workflow": "alpha", "started_by": "olive"}, [0]),
])
def test_each_filter_keeps_the_runs_it_names_in_the_order_asked(runs, query, kept):
    assert ids(query, runs) == kept


def test_a_refused_filter_gives_no_rows_but_a_bad_request(runs):
    with pytest.raises(BadRequest, match=r"^started_by must be at most 150 characters long \(it has 151\)$"):
        filtered(RunFilter, {"started_by": "x" * 151}, Run.objects.all())


@pytest.mark.parametrize("query", [
    {}, {"status": "failed"}, {"workflow": "alpha"}, {"started_by": "olive"}, {"since": "2001-06-02"},
    {"until": "2001-06-01T23:00+01:00"}, {"sort": "workflow"}, {"sort": "-status", "workflow": "alpha"},
])
def test_the_runs_page_lists_the_runs_filtered_gives_in_its_order(client, runs, operator, query):
    client.force_login(operator)
    page = client.get(reverse("console:runs"), query).content.decode()
    listed = [int(pk) for pk in re.findall(r'data-run="(\d+)"', page)]
    assert listed == list(filtered(RunFilter, query, runs_for_user(operator)).values_list("pk", flat=True))


def test_the_page_and_filtered_say_the_same_sentence_for_a_bad_value(client, runs, operator):
    client.force_login(operator)
    page = client.get(reverse("console:runs"), {"until": "2030-02-31"})
    with pytest.raises(BadRequest) as refused:
        filtered(RunFilter, {"until": "2030-02-31"}, Run.objects.all())
    assert page.status_code == 400 and refused.value.message in page.content.decode()
