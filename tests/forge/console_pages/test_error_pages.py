"""403 and 404 are pages of the console: its layout, the reason in words, a way to log out, and one line in the
log (no traceback per refused request)."""

import logging

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_person_in_no_group_reads_why_in_the_console_s_layout_and_can_log_out(client, outsider, caplog):
    client.force_login(outsider)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        page = client.get(reverse("console:runs"))
    html = page.content.decode()
    assert page.status_code == 403
    assert 'class="topbar"' in html and "console/console.css" in html  # the layout
    assert "You are in no group of this console: ask an admin to add you to one." in html
    assert f'action="{reverse("console:logout")}"' in html and "Log out" in html
    assert 'href="/runs/"' not in html  # no link to pages that would refuse them too
    refusals = [r for r in caplog.records if r.name == "django.request"]
    assert len(refusals) == 1 and refusals[0].exc_info is None and refusals[0].exc_text is None
    assert "\n" not in refusals[0].getMessage() and "/runs/" in refusals[0].getMessage()
    assert "no group" in refusals[0].getMessage()


def test_the_log_out_form_on_the_403_page_logs_out(client, outsider):
    client.force_login(outsider)
    assert client.get(reverse("console:dashboard")).status_code == 403
    out = client.post(reverse("console:logout"))
    assert out.status_code == 302 and out.url == reverse("console:login")
    assert client.get(reverse("console:dashboard")).status_code == 302  # logged out: asked to log in


@pytest.mark.parametrize("path, says", [
    ("/runs/999999/", "No Run matches the given query."),
    ("/no/such/page/", "There is no page at this address."),
    ("/runs/1/steps/%3Cscript%3E/", None),  # escaped, whatever it says
])
def test_a_missing_page_says_so_in_the_console_s_layout(client, operator, run, caplog, path, says):
    client.force_login(operator)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        page = client.get(path.replace("/1/", f"/{run.pk}/"))
    html = page.content.decode()
    assert page.status_code == 404 and 'class="topbar"' in html and "Log out" in html
    assert 'href="/runs/"' in html  # the navigation is there
    assert says is None or says in html
    assert "<script>" not in html.split("<main>", 1)[1]
    refusals = [r for r in caplog.records if r.name == "django.request"]
    assert len(refusals) == 1 and refusals[0].exc_info is None


def test_a_missing_page_for_someone_logged_out_offers_to_log_in(client):
    page = client.get("/no/such/page/")
    assert page.status_code == 404 and 'href="/login/"' in page.content.decode()
    assert "Log out" not in page.content.decode()


def test_the_error_pages_carry_no_inline_script_or_style(client, outsider):
    client.force_login(outsider)
    html = client.get(reverse("console:dashboard")).content.decode()
    assert "<style" not in html and "style=" not in html
    assert all('src="' in tag for tag in html.split("<script")[1:])
