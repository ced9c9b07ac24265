"""Who may read the audit trail: a member of any group (as who may open the console's audit page), with a token
only when it holds audit:read; nobody else."""

import pytest
from django.urls import reverse

from forge.accounts.tokens import token_create
from forge.audit.models import AuditEvent
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


def test_a_token_without_audit_read_reads_nothing_one_with_it_reads_all(event, operator):
    made = [(token_create(user=operator, name="-".join(scopes), scopes=scopes)[0], reads)
            for scopes, reads in ((["runs:read"], False), (["runs:read", "audit:read"], True))]
    trail = set(AuditEvent.objects.all())  # the event, and the tokens' own
    for token, reads in made:
        operator.forge_token = token  # as forge/api/auth.py signs the token's owner in, carrying it
        assert set(audit_for_user(operator)) == (trail if reads else set()) and (event in trail)


def test_the_console_refuses_its_audit_page_to_whom_the_selector_gives_nothing(client, event, outsider):
    client.force_login(outsider)
    assert client.get(reverse("console:audit")).status_code == 403
