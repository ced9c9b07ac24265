"""Every console page names its icon, a file the console serves (a browser otherwise asks for /favicon.ico and
logs a 404 on every page)."""

import re

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("page", ["console:login", "console:dashboard", "console:runs"])
def test_a_page_names_an_icon_that_exists(client, operator, page):
    if page != "console:login":
        client.force_login(operator)
    html = client.get(reverse(page)).content.decode()
    icon = re.search(r'<link rel="icon" href="/static/([^"]+)"', html)
    assert icon and finders.find(icon.group(1)), "no icon, or one the console does not have"
