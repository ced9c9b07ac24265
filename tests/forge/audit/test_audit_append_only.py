"""The audit trail is append-only: no ordinary ORM path changes or removes a row."""

import pytest

from forge.audit.models import AppendOnly, AuditEvent
from forge.audit.services import audit


@pytest.fixture
def event(db, operator):
    audit("forge.run.started", user=operator, run_id=7, detail={"workflow": "chain"}, key="start:7")
    return AuditEvent.objects.get(key="start:7")


def unchanged(event):
    stored = AuditEvent.objects.get(pk=event.pk)
    return (stored.code, stored.actor, stored.run_id, stored.detail) == ("forge.run.started", "olive", 7,
                                                                        {"workflow": "chain"})


def test_audit_writes_the_actor_and_target(event, operator):
    stored = AuditEvent.objects.get(pk=event.pk)
    assert (stored.actor, stored.actor_id, stored.target) == ("olive", operator.pk, "run:7")


def test_an_audit_with_a_key_is_written_once(event):
    audit("forge.run.started", run_id=7, key="start:7")
    assert AuditEvent.objects.filter(key="start:7").count() == 1
    assert unchanged(event)


def test_saving_an_existing_row_is_refused(event):
    stored = AuditEvent.objects.get(pk=event.pk)
    stored.code = "forge.run.cancelled"
    with pytest.raises(AppendOnly):
        stored.save()
    with pytest.raises(AppendOnly):
        stored.save(update_fields=["code"])
    with pytest.raises(AppendOnly):
        stored.save(force_update=True)
    assert unchanged(event)


def test_a_queryset_update_is_refused(event):
    with pytest.raises(AppendOnly):
        AuditEvent.objects.filter(pk=event.pk).update(code="forge.run.cancelled")
    with pytest.raises(AppendOnly):
        AuditEvent.objects.update(actor="mallory")
    assert unchanged(event)


def test_bulk_update_is_refused(event):
    stored = AuditEvent.objects.get(pk=event.pk)
    stored.actor = "mallory"
    with pytest.raises(AppendOnly):
        AuditEvent.objects.bulk_update([stored], ["actor"])
    with pytest.raises(AppendOnly):
        AuditEvent.objects.all().bulk_update([stored], ["actor"])
    assert unchanged(event)


def test_update_or_create_on_an_existing_row_is_refused(event):
    with pytest.raises(AppendOnly):
        AuditEvent.objects.update_or_create(key="start:7", defaults={"actor": "mallory"})
    assert unchanged(event)


def test_deleting_an_instance_is_refused(event):
    with pytest.raises(AppendOnly):
        AuditEvent.objects.get(pk=event.pk).delete()
    assert unchanged(event)


def test_deleting_through_a_queryset_is_refused(event):
    with pytest.raises(AppendOnly):
        AuditEvent.objects.filter(pk=event.pk).delete()
    with pytest.raises(AppendOnly):
        AuditEvent.objects.all().delete()
    assert AuditEvent.objects.count() >= 1
    assert unchanged(event)


def test_an_upsert_cannot_rewrite_an_existing_row(event):
    forged = AuditEvent(code="forge.run.cancelled", actor="mallory", run_id=7, key="start:7")
    try:
        AuditEvent.objects.bulk_create([forged], update_conflicts=True, unique_fields=["key"],
                                       update_fields=["code", "actor"])
    except AppendOnly:
        pass
    assert unchanged(event)


def test_the_base_manager_cannot_rewrite_or_delete_rows(event):
    for attempt in (lambda: AuditEvent._base_manager.filter(pk=event.pk).update(actor="mallory"),
                    lambda: AuditEvent._base_manager.filter(pk=event.pk).delete()):
        try:
            attempt()
        except AppendOnly:
            pass
    assert unchanged(event)
