"""approvals_queryset_for_user: the pending approvals a person may decide, as a queryset a list can page and
filter, holding exactly what approvals_for_user lists."""

import pytest

from forge.runs import services
from forge.runs.models import Approval
from forge.runs.selectors import approvals_for_user, approvals_queryset_for_user
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db

ASKS = """
name: asks_{name}
steps:
  - {{id: sign_off, approval: required, approvers: [{group}]}}
"""


@pytest.fixture
def pending(save_workflow, operator):
    """Two runs by olive waiting: one for Approvers, one for a group named Finance."""
    return [fast_forward(services.run_start(user=operator, version=save_workflow(ASKS.format(name=group.lower(), group=group))))
            for group in ("Approvers", "Finance")]


@pytest.mark.parametrize("who, decides", [("approver", ["asks_approvers"]), ("operator", []), ("outsider", []),
                                          ("admin_user", ["asks_approvers", "asks_finance"])])
def test_it_holds_what_the_person_may_decide_and_nothing_else(request, pending, who, decides):
    user = request.getfixturevalue(who)
    page = approvals_queryset_for_user(user).order_by("run__workflow__name")
    assert [a.run.workflow.name for a in page] == decides
    assert sorted(a.pk for a in page) == sorted(a.pk for a in approvals_for_user(user))


def test_it_pages_and_filters_as_a_queryset(pending, admin_user):
    mine = approvals_queryset_for_user(admin_user)
    assert mine.filter(run__workflow__name="asks_finance").count() == 1
    assert len(mine.order_by("-id")[:1]) == 1


def test_a_decided_approval_leaves_it(pending, approver):
    Approval.objects.filter(run=pending[0]).update(status=Approval.APPROVED)
    assert not approvals_queryset_for_user(approver).exists()
