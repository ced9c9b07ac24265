"""Who may see workflows (a member of any group, as the console's workflow pages) and WorkflowFilter: a name
exactly, or a part of it in any case; a value that names nothing is a BadRequest naming the filter."""

import pytest

from forge.errors import BadRequest
from forge.filters import filtered
from forge.workflows.filters import WorkflowFilter
from forge.workflows.models import Workflow
from forge.workflows.selectors import workflows_for_user

pytestmark = pytest.mark.django_db

ONE = "name: {name}\nsteps:\n  - {{id: a, agent: mock, command: a}}\n"


@pytest.fixture
def workflows(save_workflow):
    return [save_workflow(ONE.format(name=name)).workflow for name in ("nightly_report", "weekly_report", "deploy")]


def names(query, workflows) -> list[str]:
    ours = Workflow.objects.filter(pk__in=[w.pk for w in workflows]).order_by("name")  # the examples are there too
    return list(filtered(WorkflowFilter, query, ours).values_list("name", flat=True))


@pytest.mark.parametrize("query, expected", [
    ({}, ["deploy", "nightly_report", "weekly_report"]), ({"name": "deploy"}, ["deploy"]),
    ({"name": "Deploy"}, []), ({"name": "report"}, []),
    ({"name_contains": "REPORT"}, ["nightly_report", "weekly_report"]),
    ({"name_contains": "_"}, ["nightly_report", "weekly_report"]),
    ({"name_contains": "%"}, []), ({"name_contains": "ly_r", "name": "weekly_report"}, ["weekly_report"]),
])
def test_each_filter_keeps_the_workflows_it_names(workflows, query, expected):
    assert names(query, workflows) == expected


@pytest.mark.parametrize("name", ["name", "name_contains"])
def test_a_name_longer_than_any_is_a_bad_request_naming_the_filter(workflows, name):
    with pytest.raises(BadRequest) as refused:
        filtered(WorkflowFilter, {name: "n" * 129}, Workflow.objects.all())
    assert refused.value.message == f"{name} must be at most 128 characters long (it has 129)"


@pytest.mark.parametrize("who, sees", [("operator", True), ("approver", True), ("admin_user", True),
                                       ("outsider", False)])
def test_members_of_a_group_see_every_workflow_and_outsiders_none(request, workflows, who, sees):
    seen = set(workflows_for_user(request.getfixturevalue(who)))
    assert seen == (set(Workflow.objects.all()) if sees else set()) and (set(workflows) <= seen) == sees
