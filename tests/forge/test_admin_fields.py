"""The admin's JSON fields keep only JSON both databases keep: what json.loads reads but a column refuses, or
what the parser cannot read, is an error on the form, shown again as typed, and saves nothing."""

import html

import pytest
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.governance.models import Agent
from tests.forge.admin_pages import staff
from tests.forge.governance.test_configuration_audit import AGENT

pytestmark = pytest.mark.django_db


KEPT_NOT = "this JSON cannot be stored: its values "
UNSTORABLE = "a NUL character or an unpaired surrogate"


@pytest.mark.parametrize("config, says", [
    ('{"a": "\\u0000"}', f"{KEPT_NOT}hold a string with {UNSTORABLE}"),
    ('{"a": "\\ud800"}', f"{KEPT_NOT}hold a string with {UNSTORABLE}"),
    ('{"a\\u0000": 1}', f"{KEPT_NOT}hold a key with {UNSTORABLE}"),
    ('{"a": NaN}', f"{KEPT_NOT}hold a number that is not finite (NaN or Infinity)"),
    ('{"a": 1e999}', f"{KEPT_NOT}hold a number that is not finite (NaN or Infinity)"),
    ('{"a": ' + "9" * 4000 + "}", f"{KEPT_NOT}hold an integer that does not fit in 64 bits"),
    ('{"a": ' + "9" * 5000 + "}", "this is not JSON that can be read: Exceeds the limit (4300 digits)"),
    ("[" * 100_000 + "]" * 100_000, "the JSON would nest too deeply to be read"),
    ('{"a": ' + "[" * 70 + "]" * 70 + "}", f"{KEPT_NOT}nest deeper than 64 levels"),
])
def test_json_no_database_keeps_is_an_error_on_the_form(client, config, says):
    client.force_login(staff("adele", "Admins"))
    page = client.post(reverse("admin:forge_governance_agent_add"), {**AGENT.add, "name": "a", "config": config})
    text = html.unescape(page.content.decode())
    assert page.status_code == 200 and says in text
    assert config[:200] in text  # shown again as typed
    assert not Agent.objects.filter(name="a").exists() and not AuditEvent.objects.exists()


def test_json_both_databases_keep_saves(client):
    client.force_login(staff("adele", "Admins"))
    config = '{"a": "²٣\\t", "n": 9223372036854775807, "x": 1.5}'
    page = client.post(reverse("admin:forge_governance_agent_add"), {**AGENT.add, "name": "a", "config": config})
    assert page.status_code == 302
    assert Agent.objects.get(name="a").config == {"a": "²٣\t", "n": 2**63 - 1, "x": 1.5}
