"""Editing configuration in the Django admin as a person does: real POSTs to its add, change, delete and
change list pages, and what the audit trail says afterwards.

A test module describes each model's form as a `Page` and subclasses `AuditedAdminPages` with a `page`
fixture that gives them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied
from django.forms.models import model_to_dict
from django.urls import reverse

from forge.audit.models import AuditEvent
from tests.forge.conftest import member


@dataclass(frozen=True)
class Page:
    """One model's admin pages: a valid add form, what a change alters, and a value the model refuses."""

    model: type
    noun: str  # of its audit codes: forge.<noun>.created|changed|deleted, target <noun>:<name>
    add: dict[str, str]
    change: dict[str, str]
    bad: dict[str, str] = field(default_factory=dict)

    def url(self, view: str, *args) -> str:
        opts = self.model._meta
        return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=args)

    def form(self, name: str, **more) -> dict[str, str]:
        return {**self.add, "name": name, **more}

    def events(self, name: str):
        return AuditEvent.objects.filter(target=f"{self.noun}:{name}").order_by("id")


def staff(username: str, *groups: str, permissions: tuple[str, ...] = ()):
    user = member(username, *groups)
    user.is_staff = True
    user.save()
    for codename in permissions:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


def stored(page: Page, name: str) -> dict | None:
    row = page.model.objects.filter(name=name).first()
    return model_to_dict(row) if row else None


class AdminEditor:
    """An Admins member (adele) logged in to the admin, and a way to add rows through its add page."""

    @pytest.fixture
    def admin_client(self, client, db):
        self.editor = staff("adele", "Admins")
        client.force_login(self.editor)
        return client

    def add(self, client, page: Page, name: str, **more):
        response = client.post(page.url("add"), page.form(name, **more))
        assert response.status_code == 302, response.content.decode()[:2000]
        return page.model.objects.get(name=name)


class AuditedAdminPages(AdminEditor):
    """Every edit an Admins member makes in the admin is one AuditEvent with who, before and after."""

    def test_creating_one_writes_a_created_event_with_the_editor_and_the_new_values(self, admin_client, page):
        self.add(admin_client, page, "first")
        (event,) = page.events("first")
        assert event.code == f"forge.{page.noun}.created"
        assert (event.actor, event.actor_id) == ("adele", self.editor.pk)
        assert event.detail["after"]["name"] == "first"
        assert "token_hash" not in json.dumps(event.detail)

    def test_changing_one_writes_a_changed_event_with_only_the_changed_fields_before_and_after(
            self, admin_client, page):
        row = self.add(admin_client, page, "first")
        response = admin_client.post(page.url("change", row.pk), page.form("first", **page.change))
        assert response.status_code == 302, response.content.decode()[:2000]
        created, changed = page.events("first")
        assert changed.code == f"forge.{page.noun}.changed"
        assert (changed.actor, changed.actor_id) == ("adele", self.editor.pk)
        assert set(changed.detail) == {"before", "after"}
        assert set(changed.detail["after"]) == set(changed.detail["before"]) == set(page.change)
        for name, value in changed.detail["before"].items():
            assert value == created.detail["after"][name]
        assert changed.detail["after"] != changed.detail["before"]

    def test_deleting_one_writes_a_deleted_event_with_what_it_held(self, admin_client, page):
        row = self.add(admin_client, page, "first")
        response = admin_client.post(page.url("delete", row.pk), {"post": "yes"})
        assert response.status_code == 302
        assert not page.model.objects.filter(pk=row.pk).exists()
        created, deleted = page.events("first")
        assert deleted.code == f"forge.{page.noun}.deleted"
        assert (deleted.actor, deleted.detail["before"]) == ("adele", created.detail["after"])

    def test_the_bulk_delete_action_writes_one_deleted_event_per_row(self, admin_client, page):
        rows = [self.add(admin_client, page, name) for name in ("first", "second")]
        response = admin_client.post(page.url("changelist"), {
            "action": "delete_selected", "_selected_action": [row.pk for row in rows], "post": "yes"})
        assert response.status_code == 302
        assert not page.model.objects.filter(pk__in=[row.pk for row in rows]).exists()
        for name in ("first", "second"):
            assert [e.code for e in page.events(name)] == [f"forge.{page.noun}.created",
                                                           f"forge.{page.noun}.deleted"]

    def test_a_refused_value_saves_and_audits_nothing_and_the_corrected_form_is_audited_once(
            self, admin_client, page):
        response = admin_client.post(page.url("add"), page.form("first", **page.bad))
        assert response.status_code == 200 and response.context["errors"]
        assert not page.model.objects.filter(name="first").exists()
        assert not AuditEvent.objects.exists()
        self.add(admin_client, page, "first")
        assert [e.code for e in AuditEvent.objects.all()] == [f"forge.{page.noun}.created"]

    def test_a_view_only_staff_user_changes_nothing_on_any_page_nor_through_the_service(
            self, client, db, page):
        editor = staff("adele", "Admins")
        client.force_login(editor)
        row = self.add(client, page, "first")
        before, events = stored(page, "first"), AuditEvent.objects.count()
        viewer = staff("vera", permissions=(f"view_{page.model._meta.model_name}",))
        client.force_login(viewer)
        assert client.post(page.url("add"), page.form("second")).status_code == 403
        assert client.post(page.url("change", row.pk), page.form("first", **page.change)).status_code == 403
        assert client.post(page.url("delete", row.pk), {"post": "yes"}).status_code == 403
        client.post(page.url("changelist"), {"action": "delete_selected", "_selected_action": [row.pk],
                                             "post": "yes"})
        assert stored(page, "first") == before and not page.model.objects.filter(name="second").exists()
        assert AuditEvent.objects.count() == events

        from forge.governance import services  # a new module: on today's main only this part can fail

        row.refresh_from_db()
        for attempt in (lambda: services.config_save(user=viewer, instance=row),
                        lambda: services.config_delete(user=viewer, instance=row)):
            with pytest.raises(PermissionDenied):
                attempt()
        assert stored(page, "first") == before
        assert AuditEvent.objects.count() == events
