"""Who may read the audit trail: a member of any group (as who may open the console's audit page), nobody else."""

import pytest
from django.urls import reverse

from forge.audit.selectors import audit_for_user
from forge.audit.services import audit

pytestmark = pytest.mark.django_db


@pytest.fixture
def event():
    return audit("forge.test.seen", target="test:1")


@pytest.mark.parametrize("who", ["operator", "approver", "admin_user"])
def test_a_member_of_a_group_reads_the_whole_trail(request, event, who):
    assert list(audit_for_user(request.getfixturevalue(who))) == [event]


def test_an_outsider_an_inactive_member_and_no_one_read_nothing(event, outsider, operator):
    operator.is_active = False
    assert [list(audit_for_user(who)) for who in (outsider, operator, None)] == [[], [], []]


def test_the_console_refuses_its_audit_page_to_whom_the_selector_gives_nothing(client, event, outsider):
    client.force_login(outsider)
    assert client.get(reverse("console:audit")).status_code == 403
