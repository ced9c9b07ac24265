"""A post without its CSRF token is refused with the console's own page: nothing changes, and the page needs no
inline style the Content-Security-Policy would refuse (Django's default page has one)."""

from django.test import Client

from forge.audit.models import AuditEvent


def test_a_post_without_its_token_is_refused_in_the_console_s_page(operator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    before = AuditEvent.objects.count()
    page = client.post("/runs/1/cancel/", {"reason": "no token"})
    assert page.status_code == 403
    text = page.content.decode()
    assert "This form can no longer be sent" in text and "Nothing was changed" in text
    assert "<style" not in text and "style=" not in text and "console/console.css" in text
    assert AuditEvent.objects.count() == before
