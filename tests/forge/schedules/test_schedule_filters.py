"""Who may see schedules (a member of any group, as on the workflows' pages) and ScheduleFilter: by workflow,
owner and whether it is paused; a value that names nothing is a BadRequest naming the filter."""

import pytest

from forge.errors import BadRequest
from forge.filters import filtered
from forge.schedules import services
from forge.schedules.filters import ScheduleFilter
from forge.schedules.models import Schedule
from forge.schedules.selectors import schedules_for_user
from tests.forge.schedules.conftest import MONDAY

pytestmark = pytest.mark.django_db


@pytest.fixture
def schedules(report, sign_off, add_schedule, admin_user):
    """olive's report schedule, olive's sign-off schedule (paused), adam's report schedule."""
    made = [add_schedule(report), add_schedule(sign_off), add_schedule(report, user=admin_user)]
    services.schedule_pause(user=made[1].owner, schedule=made[1], now=MONDAY)
    return made


def kept(query, schedules) -> set[int]:
    order = {s.pk: i for i, s in enumerate(schedules)}
    return {order[pk] for pk in filtered(ScheduleFilter, query, Schedule.objects.all()).values_list("pk", flat=True)}


@pytest.mark.parametrize("query, expected", [
    ({}, {0, 1, 2}), ({"workflow": "nightly_report"}, {0, 2}), ({"workflow": "nightly"}, set()),
    ({"owner": "olive"}, {0, 1}), ({"owner": "adam"}, {2}), ({"owner": "'; drop table x; --"}, set()),
    ({"enabled": "yes"}, {0, 2}), ({"enabled": "no"}, {1}), ({"enabled": "no", "owner": "adam"}, set()),
])
def test_each_filter_keeps_the_schedules_it_names(schedules, query, expected):
    assert kept(query, schedules) == expected


@pytest.mark.parametrize("query, says", [
    ({"enabled": "true"}, "enabled must be one of yes, no"),
    ({"workflow": "w" * 129}, "workflow must be at most 128 characters long (it has 129)"),
    ({"owner": "o" * 151}, "owner must be at most 150 characters long (it has 151)"),
])
def test_a_value_that_names_nothing_is_a_bad_request_naming_the_filter(schedules, query, says):
    with pytest.raises(BadRequest) as refused:
        filtered(ScheduleFilter, query, Schedule.objects.all())
    assert refused.value.message == says and list(refused.value.extra["errors"]) == list(query)


@pytest.mark.parametrize("who, sees", [("operator", 3), ("approver", 3), ("admin_user", 3), ("outsider", 0)])
def test_members_of_a_group_see_every_schedule_and_outsiders_none(request, schedules, who, sees):
    assert schedules_for_user(request.getfixturevalue(who)).count() == sees


def test_an_inactive_member_sees_no_schedule(schedules, operator):
    operator.is_active = False
    assert not schedules_for_user(operator).exists() and not schedules_for_user(None).exists()
