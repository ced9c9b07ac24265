"""A change list's post that names rows by something that is no id, or by the id of a row that is gone,
changes nothing and says why, rather than a 500 or a row built out of two columns; a right one still works."""

import pytest
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.governance.models import Policy
from tests.forge.admin_pages import staff
from tests.forge.governance.test_configuration_audit import POLICY

pytestmark = pytest.mark.django_db
LIST = reverse("admin:forge_governance_policy_changelist")


@pytest.fixture
def policy(client):
    client.force_login(staff("adele", "Admins"))
    assert client.post(reverse("admin:forge_governance_policy_add"), {**POLICY.add, "name": "p"}).status_code == 302
    return Policy.objects.get()


def editable(policy, **changes) -> dict:
    return {"form-TOTAL_FORMS": "1", "form-INITIAL_FORMS": "1", "form-MIN_NUM_FORMS": "0",
            "form-MAX_NUM_FORMS": "1000", "form-0-id": str(policy.pk), "form-0-enabled": "on",
            "form-0-order": "0", "_save": "Save", **changes}


def said(page) -> str:
    return " ".join(str(m) for m in page.context["messages"]) if page.context else ""


@pytest.mark.parametrize("selected", ["nan", "²", "9" * 5000, str(2**64), "1e999", "x" * 10_000])
def test_an_action_on_rows_named_by_no_id_changes_nothing(client, policy, selected):
    events = AuditEvent.objects.count()
    page = client.post(LIST, {"action": "delete_selected", "_selected_action": [str(policy.pk), selected],
                              "post": "yes"}, follow=True)
    assert "Nothing was changed: a row is named by something that is no id." in said(page)
    assert Policy.objects.filter(pk=policy.pk).exists() and AuditEvent.objects.count() == events


def test_an_action_on_real_rows_still_runs(client, policy):
    client.post(LIST, {"action": "delete_selected", "_selected_action": [str(policy.pk)], "post": "yes"})
    assert not Policy.objects.exists()


@pytest.mark.parametrize("changes, says", [
    ({"form-0-id": "nan"}, "a row is named by something that is no id"),
    ({"form-0-id": "999999"}, "a row it names no longer exists"),
    ({"form-TOTAL_FORMS": "٣"}, "the list's form names other rows than the list shows"),
    ({"form-INITIAL_FORMS": "²"}, "the list's form was altered"),
    ({"form-TOTAL_FORMS": "9" * 5000}, "the list's form was altered"),
])
def test_editable_columns_naming_other_rows_change_nothing(client, policy, changes, says):
    page = client.post(LIST, editable(policy, **changes, **{"form-0-order": "5"}), follow=True)
    assert f"Nothing was changed: {says}." in said(page)
    assert list(Policy.objects.values_list("pk", "order")) == [(policy.pk, 0)]


def test_editable_columns_of_a_shown_row_still_save(client, policy):
    assert client.post(LIST, editable(policy, **{"form-0-order": "5"})).status_code == 302
    assert Policy.objects.get().order == 5
