"""Who may do what is audited like every other change: a person created, changed (activated, made staff, a new
password), deleted; their groups and permissions; a group's permissions; from Django admin (in the Admin's name)
and from anywhere else (the system's). A password is said to have changed; its hash is never written."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.db import transaction

from forge.accounts.apps import grant_admin_permissions
from forge.audit.models import AuditEvent
from forge.workflows.services import workflow_version_save

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("people_audited")]


BEFORE = {"id": 0}


@pytest.fixture(autouse=True)
def before(db):
    """The last event before the test."""
    BEFORE["id"] = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return BEFORE["id"]


def events(prefix: str = "forge.") -> list[tuple[str, str, str, dict]]:
    """The events the test wrote whose code starts with `prefix` (logins apart), in order."""
    return [(e.code, e.actor, e.target, e.detail) for e in AuditEvent.objects.filter(
        id__gt=BEFORE["id"], code__startswith=prefix).exclude(code__startswith="forge.login.").order_by("id")]


def test_granting_the_admins_their_permissions_on_migrating_is_audited_as_the_system(db):
    admins = Group.objects.get(name="Admins")
    lift = Permission.objects.get(codename="delete_loginfailure")
    admins.permissions.remove(lift)
    grant_admin_permissions(sender=None)
    lift_name = "forge_accounts.delete_loginfailure"
    assert events("forge.group.permissions_changed") == [
        ("forge.group.permissions_changed", "system", "group:Admins", {"removed": [lift_name]}),
        ("forge.group.permissions_changed", "system", "group:Admins", {"added": [lift_name]})]


@pytest.fixture
def boss(db):
    return User.objects.create_superuser("boss", password="pw-boss-1234")


@pytest.fixture
def person(db):
    return User.objects.create_user("pat", password="pw-pat-first-1")


def test_a_person_created_is_audited_without_their_password(db):
    User.objects.create_user("pat", email="pat@example.com", password="s3cret-Pa55word")
    ((code, actor, target, detail),) = events("forge.user.")
    assert (code, actor, target) == ("forge.user.created", "system", "user:pat")
    assert detail["is_active"] is True and detail["email"] == "pat@example.com" and detail["password"] == "set"
    assert "s3cret" not in json.dumps(detail) and "pbkdf2" not in json.dumps(detail)


def test_activation_staff_and_a_new_password_are_audited_and_no_hash_is_written(person):
    old_hash = person.password
    person.is_active = False
    person.save()
    person.is_active, person.is_staff = True, True
    person.set_password("another-Pa55word")
    person.save()
    written = events("forge.user.changed")
    assert [(code, actor, detail) for code, actor, _, detail in written] == [
        ("forge.user.changed", "system", {"is_active": [True, False]}),
        ("forge.user.changed", "system",
         {"is_active": [False, True], "is_staff": [False, True], "password": "changed"})]
    everything = json.dumps([e.detail for e in AuditEvent.objects.all()])
    assert old_hash not in everything and person.password not in everything and "pbkdf2" not in everything


def test_a_login_or_a_save_that_changes_nothing_writes_nothing(client, person):
    before = AuditEvent.objects.count()
    person.save()
    client.post("/login/", {"username": "pat", "password": "pw-pat-first-1"})
    assert User.objects.get(pk=person.pk).last_login is not None
    assert AuditEvent.objects.exclude(code__startswith="forge.login.").count() == before


def test_groups_from_either_side_and_cleared_are_audited_per_person(person):
    operators, approvers = Group.objects.get(name="Operators"), Group.objects.get(name="Approvers")
    other = User.objects.create_user("quinn")
    person.groups.add(operators, approvers)
    approvers.user_set.add(other)
    approvers.user_set.remove(person)
    person.groups.clear()
    approvers.user_set.clear()
    assert [(code, target, detail) for code, _, target, detail in events("forge.user.groups")] == [
        ("forge.user.groups_changed", "user:pat", {"added": ["Approvers", "Operators"]}),
        ("forge.user.groups_changed", "user:quinn", {"added": ["Approvers"]}),
        ("forge.user.groups_changed", "user:pat", {"removed": ["Approvers"]}),
        ("forge.user.groups_changed", "user:pat", {"removed": ["Operators"]}),
        ("forge.user.groups_changed", "user:quinn", {"removed": ["Approvers"]})]


def test_a_group_s_permissions_and_a_person_s_own_are_audited(person):
    group = Group.objects.create(name="Auditors")
    view = Permission.objects.get(codename="view_auditevent")
    group.permissions.add(view)
    group.permissions.add(view)  # already held: nothing changes, nothing is written
    person.user_permissions.add(view)
    view.group_set.remove(group)
    group.name = "Readers"
    group.save()
    group.delete()
    assert [(code, target, detail) for code, _, target, detail in events("forge.group.")
            + events("forge.user.permissions")] == [
        ("forge.group.created", "group:Auditors", {"name": "Auditors"}),
        ("forge.group.permissions_changed", "group:Auditors", {"added": ["forge_audit.view_auditevent"]}),
        ("forge.group.permissions_changed", "group:Auditors", {"removed": ["forge_audit.view_auditevent"]}),
        ("forge.group.renamed", "group:Readers", {"name": ["Auditors", "Readers"]}),
        ("forge.group.deleted", "group:Readers", {"name": "Readers"}),
        ("forge.user.permissions_changed", "user:pat", {"added": ["forge_audit.view_auditevent"]})]


def test_a_change_undone_leaves_no_audit_event(person):
    with pytest.raises(RuntimeError), transaction.atomic():
        person.groups.add(Group.objects.get(name="Admins"))
        raise RuntimeError("the change is rolled back")
    assert not events("forge.user.groups")


def test_the_first_admin_made_by_the_forge_command_is_audited_as_the_system(db, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    call_command("forge_admin")
    assert [(code, actor, target) for code, actor, target, _ in events("forge.user.")] == [
        ("forge.user.created", "system", "user:admin"), ("forge.user.groups_changed", "system", "user:admin")]


def test_django_admin_changes_are_audited_in_the_admin_s_name(client, boss, person):
    client.force_login(boss)
    added = client.post("/admin/auth/user/add/", {"username": "newbie", "password1": "Long-enough-Pa55word",
                                                  "password2": "Long-enough-Pa55word", "usable_password": "true"})
    assert added.status_code == 302, added.content.decode()[:2000]
    newbie = User.objects.get(username="newbie")
    changed = client.post(f"/admin/auth/user/{newbie.pk}/change/", {
        "username": "newbie", "is_active": "on", "groups": [Group.objects.get(name="Approvers").pk],
        "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"})
    assert changed.status_code == 302, changed.content.decode()[:3000]
    password = client.post(f"/admin/auth/user/{person.pk}/password/", {
        "password1": "A-new-Pa55word-here", "password2": "A-new-Pa55word-here", "usable_password": "true"})
    assert password.status_code == 302, password.content.decode()[:2000]
    deleted = client.post(f"/admin/auth/user/{newbie.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302
    written = [(code, actor, target, detail) for code, actor, target, detail in events("forge.user.")
               if actor != "system"]
    assert written == [
        ("forge.user.created", "boss", "user:newbie", {
            "username": "newbie", "email": "", "first_name": "", "last_name": "", "is_active": True,
            "is_staff": False, "is_superuser": False, "password": "set"}),
        ("forge.user.groups_changed", "boss", "user:newbie", {"added": ["Approvers"]}),
        ("forge.user.changed", "boss", "user:pat", {"password": "changed"}),
        ("forge.user.deleted", "boss", "user:newbie", {"username": "newbie"})]
    assert User.objects.get(pk=person.pk).password not in json.dumps([e.detail for e in AuditEvent.objects.all()])


def test_the_author_of_a_workflow_version_is_not_deleted_and_admin_says_why(client, boss):
    author = User.objects.create_user("writer")
    author.groups.add(Group.objects.get(name="Operators"))
    workflow_version_save(user=author, source="name: by_writer\nsteps:\n  - {id: a, agent: mock, command: a}\n")
    client.force_login(boss)
    page = client.post(f"/admin/auth/user/{author.pk}/delete/", {"post": "yes"})
    assert page.status_code == 200 and "protected" in page.content.decode()
    assert User.objects.filter(pk=author.pk).exists() and not events("forge.user.deleted")
