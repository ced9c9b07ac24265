"""Every change to people and groups is audited, whoever makes it and however (Django admin, the `forge`
command, a shell): signals of Django's own models, written in the transaction of the change. The person acting
is the request's (forge/accounts/acting.py), else the system. A password is said to have changed, never shown."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save

from forge.accounts.acting import acting_person
from forge.audit import codes
from forge.audit.services import audit

# What a person's audit event shows of the account, before and after (the password only as "changed").
USER_FIELDS = ("username", "email", "first_name", "last_name", "is_active", "is_staff", "is_superuser")


def _receivers() -> list[tuple]:
    users = get_user_model()
    wired = [(pre_save, _user_before, users, "user-before"), (post_save, _user_saved, users, "user-saved"),
             (post_delete, _user_deleted, users, "user-deleted"), (pre_save, _group_before, Group, "group-before"),
             (post_save, _group_saved, Group, "group-saved"), (post_delete, _group_deleted, Group, "group-deleted")]
    for through, uid in ((users.groups.through, "groups"), (users.user_permissions.through, "user-permissions"),
                         (Group.permissions.through, "group-permissions")):
        wired.append((m2m_changed, _m2m_changed, through, uid))
    return wired


def connect() -> None:
    """Called once the models are loaded (AccountsConfig.ready)."""
    for signal, receiver, sender, uid in _receivers():
        signal.connect(receiver, sender=sender, dispatch_uid=f"forge-audit-{uid}")


def disconnect() -> None:
    """For tests about something else, whose fixtures make people they do not mean to audit."""
    for signal, _, sender, uid in _receivers():
        signal.disconnect(sender=sender, dispatch_uid=f"forge-audit-{uid}")


def _login_only(update_fields) -> bool:
    return update_fields is not None and set(update_fields) <= {"last_login"}


def _user_before(sender, instance, update_fields=None, **kwargs) -> None:
    if instance.pk is None or _login_only(update_fields):
        return
    instance._forge_before = sender.objects.filter(pk=instance.pk).values(*USER_FIELDS, "password").first()


def _user_saved(sender, instance, created, update_fields=None, **kwargs) -> None:
    if _login_only(update_fields):
        return  # a login is no change to the account (and django-axes records it)
    target = f"user:{instance.get_username()}"
    if created:
        audit(codes.USER_CREATED, user=acting_person(), target=target,
              detail={field: getattr(instance, field) for field in USER_FIELDS}
              | {"password": "set" if instance.has_usable_password() else "none"})
        return
    before = getattr(instance, "_forge_before", None) or {}
    instance._forge_before = None
    changed = {field: [before[field], getattr(instance, field)] for field in USER_FIELDS
               if field in before and before[field] != getattr(instance, field)}
    if "password" in before and before["password"] != instance.password:
        changed["password"] = "changed"
    if changed:
        audit(codes.USER_CHANGED, user=acting_person(), target=target, detail=changed)


def _user_deleted(sender, instance, **kwargs) -> None:
    audit(codes.USER_DELETED, user=acting_person(), target=f"user:{instance.get_username()}",
          detail={"username": instance.get_username()})


def _group_before(sender, instance, **kwargs) -> None:
    if instance.pk is not None:
        instance._forge_name_before = sender.objects.filter(pk=instance.pk).values_list("name", flat=True).first()


def _group_saved(sender, instance, created, **kwargs) -> None:
    before = getattr(instance, "_forge_name_before", None)
    if created:
        audit(codes.GROUP_CREATED, user=acting_person(), target=f"group:{instance.name}",
              detail={"name": instance.name})
    elif before is not None and before != instance.name:
        audit(codes.GROUP_RENAMED, user=acting_person(), target=f"group:{instance.name}",
              detail={"name": [before, instance.name]})


def _group_deleted(sender, instance, **kwargs) -> None:
    audit(codes.GROUP_DELETED, user=acting_person(), target=f"group:{instance.name}", detail={"name": instance.name})


def _m2m_changed(sender, instance, action, reverse, model, pk_set, **kwargs) -> None:
    """A person's groups or permissions, or a group's permissions, from either side of the relation."""
    if action == "pre_clear":  # what a clear removes is known only before it
        related = getattr(instance, _field(sender, instance, reverse)).all()
        instance._forge_cleared = set(related.values_list("pk", flat=True))
        return
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    pks = instance.__dict__.pop("_forge_cleared", set()) if action == "post_clear" else set(pk_set or ())
    if not pks:
        return
    verb = "added" if action == "post_add" else "removed"
    users = get_user_model()
    related = model.objects.filter(pk__in=pks)
    if model is not Group and model is not users:
        related = related.select_related("content_type")  # permissions are named by app and codename
    if sender is Group.permissions.through:
        groups, permissions = ([instance], related) if not reverse else (related, [instance])
        for group in groups:
            audit(codes.GROUP_PERMISSIONS_CHANGED, user=acting_person(), target=f"group:{group.name}",
                  detail={verb: sorted(_permission(p) for p in permissions)})
        return
    kind = "groups" if sender is users.groups.through else "permissions"
    people, others = ([instance], related) if not reverse else (related, [instance])
    named = sorted(o.name if kind == "groups" else _permission(o) for o in others)
    code = codes.USER_GROUPS_CHANGED if kind == "groups" else codes.USER_PERMISSIONS_CHANGED
    for person in people:
        audit(code, user=acting_person(), target=f"user:{person.get_username()}", detail={verb: named})


def _field(sender, instance, reverse) -> str:
    """The name of the relation's manager on `instance`."""
    users = get_user_model()
    if sender is Group.permissions.through:
        return "group_set" if reverse else "permissions"
    if sender is users.groups.through:
        return "user_set" if reverse else "groups"
    return "user_set" if reverse else "user_permissions"


def _permission(permission) -> str:
    return f"{permission.content_type.app_label}.{permission.codename}"
