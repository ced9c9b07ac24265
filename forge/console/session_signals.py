"""Tell a person's live sockets at once when their session or their rights change.

Logout, a password change, being deactivated (any save of the person) or leaving a group sends
`{"type": "session.check"}` to the person's group (forge.live.user_group) after the commit; a logout names the
session it ended (a digest, not the key), whose sockets close without a query. Every other socket that hears it
checks its ticket now (forge/accounts/session_watch.py) instead of at the end of its period.

The message reaches whatever the channel layer reaches: with Redis every daphne; with the in-memory layer of
the embedded default only the process that made the change (daphne itself for the console's logout and
Django admin), so a change made by the CLI or the cluster there is seen by the periodic check alone.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import m2m_changed, post_save

from forge.live import session_digest, user_group

log = logging.getLogger(__name__)


def connect() -> None:
    """Called once the models are loaded (ConsoleConfig.ready)."""
    user_model = get_user_model()
    user_logged_out.connect(_logged_out, dispatch_uid="forge-sockets-logged-out")
    post_save.connect(_person_saved, sender=user_model, dispatch_uid="forge-sockets-person-saved")
    m2m_changed.connect(_groups_changed, sender=user_model.groups.through, dispatch_uid="forge-sockets-groups")


def _logged_out(sender, request, user, **kwargs) -> None:
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if user is not None and session_key:
        _tell_after_commit([user.pk], ended=session_digest(session_key))


def _person_saved(sender, instance, created, update_fields=None, **kwargs) -> None:
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return  # a new account has no socket; a login changes nothing a socket holds
    _tell_after_commit([instance.pk])


def _groups_changed(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    if not reverse and action in ("post_remove", "post_clear"):  # person.groups.remove(...) / .clear()
        people = [instance.pk]
    elif reverse and action == "post_remove":  # group.user_set.remove(...)
        people = sorted(pk_set or ())
    elif reverse and action == "pre_clear":  # group.user_set.clear(): its members are known only before
        people = list(get_user_model().objects.filter(groups=instance).values_list("pk", flat=True))
    else:
        return
    _tell_after_commit(people)


def _tell_after_commit(people: list[int], ended: str | None = None) -> None:
    message = {"type": "session.check", **({"ended": ended} if ended else {})}
    transaction.on_commit(lambda: _tell(people, message))


def _tell(people: list[int], message: dict) -> None:
    layer = get_channel_layer()
    try:
        for person in people:
            async_to_sync(layer.group_send)(user_group(person), message)
    except Exception:  # noqa: BLE001 - never fail a logout or a save: the sockets' own check follows
        log.warning("could not tell the live sockets of %d people to check their session; they check on "
                    "their own within FORGE_LIVE_SESSION_CHECK_S", len(people), exc_info=True)
