"""Audit rows are never rewritten, so a secret an older configuration copied into one is redacted wherever the
trail is shown: the console's audit page and the Django admin."""

from __future__ import annotations

import pytest
from django.urls import reverse

from forge.audit.models import AuditEvent

pytestmark = pytest.mark.django_db

SECRET = "sk-abc-literal-0123456789"


@pytest.fixture
def old_event(db):
    """What `forge.agent.created` copied of an agent saved with a literal secret, before saving refused one."""
    return AuditEvent.objects.create(code="forge.agent.created", actor="adam", target="agent:legacy", detail={
        "after": {"name": "legacy", "provider": "shell", "trust_level": 2,
                  "config": {"env": {"OPENAI_API_KEY": SECRET, "MODE": "fast"}, "max_tokens": 100,
                             "headers": {"Authorization": f"Bearer {SECRET}"},
                             "secret_env": ["FORGE_AGENT_SECRET_DEPLOY"]}}})


def test_the_audit_page_shows_an_old_rows_secret_redacted_and_the_rest_as_written(client, operator, old_event):
    client.force_login(operator)

    html = client.get(reverse("console:audit")).content.decode()

    assert "forge.agent.created" in html
    assert SECRET not in html
    assert html.count("[redacted]") == 3  # every value of the env and headers maps
    assert "&#x27;MODE&#x27;: &#x27;[redacted]&#x27;" in html and "&#x27;max_tokens&#x27;: 100" in html
    assert "FORGE_AGENT_SECRET_DEPLOY" in html


def test_an_old_rows_environment_values_and_url_credentials_are_shown_redacted_whatever_their_names(client, operator):
    """Values no key name gives away: a shell agent's environment, a URL's password, query and fragment."""
    AuditEvent.objects.create(code="forge.agent.changed", actor="adam", target="agent:legacy", detail={
        "after": {"config": {"env": {"OPENAI_KEY": "sk-live-abc123",
                                     "DATABASE_URL": "postgres://forge:hunter2@db/forge"},
                             "url": "https://hooks.example/in?code=c0de-1#frag-2", "mode": "fast"}}})
    client.force_login(operator)

    html = client.get(reverse("console:audit")).content.decode()

    assert "forge.agent.changed" in html and "&#x27;mode&#x27;: &#x27;fast&#x27;" in html
    assert "https://hooks.example/in?[redacted]#[redacted]" in html
    for secret in ("sk-live-abc123", "hunter2", "c0de-1", "frag-2"):
        assert secret not in html


def test_the_admin_shows_it_redacted_and_searching_the_secret_finds_nothing(client, django_user_model, old_event):
    admin_client = client
    admin_client.force_login(django_user_model.objects.create_superuser("root", password="pw-root"))
    page = admin_client.get(reverse("admin:forge_audit_auditevent_change", args=[old_event.pk]))

    assert page.status_code == 200
    html = page.content.decode()
    assert SECRET not in html and "[redacted]" in html and "OPENAI_API_KEY" in html
    found = admin_client.get(reverse("admin:forge_audit_auditevent_changelist"), {"q": SECRET})
    assert "0 results" in found.content.decode() and "agent:legacy" not in found.content.decode()


def test_the_row_itself_is_not_rewritten(client, operator, old_event):
    client.force_login(operator)
    client.get(reverse("console:audit"))

    old_event.refresh_from_db()
    assert old_event.detail["after"]["config"]["env"]["OPENAI_API_KEY"] == SECRET
