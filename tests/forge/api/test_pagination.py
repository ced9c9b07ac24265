"""Cursor pages: a fixed order, `limit` from 1 to 200 (50 by default), opaque signed cursors both ways, and a
bad limit or a cursor not given by the list is a 400 problem."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.utils import timezone

from forge.api.pagination import SALT
from tests.forge.api.infra import URLS, bearer, fresh_rate_windows  # noqa: F401 - the fixture is used

pytestmark = [pytest.mark.django_db, URLS]
PEOPLE = "/api/v1/test/people"


@pytest.fixture
def people(operator):
    """Operator olive and 119 more; `date_joined` ties in threes, so the joined order needs its id tiebreak."""
    start = timezone.now() - timedelta(days=1)
    for n in range(119):
        User.objects.create(username=f"p{n:03}", date_joined=start + timedelta(minutes=n // 3))
    return list(User.objects.order_by("-id").values_list("username", flat=True))


@pytest.fixture
def client(operator):
    return bearer(operator)


def walk(client, url: str, key: str = "next") -> list[list[str]]:
    pages = []
    while url:
        answer = client.get(url)
        assert answer.status_code == 200, answer.content
        body = answer.json()
        assert set(body) == {"results", "next", "previous"}
        pages.append([item["username"] for item in body["results"]])
        url = body[key]
    return pages


def test_pages_hold_50_by_default_newest_first_and_end_with_no_next(client, people):
    pages = walk(client, PEOPLE)
    assert [len(page) for page in pages] == [50, 50, 20]
    assert sum(pages, []) == people
    first = client.get(PEOPLE).json()
    assert first["previous"] is None and first["next"].startswith("http://testserver/api/v1/test/people?cursor=")


def test_previous_links_walk_back_through_the_same_pages(client, people):
    forward = walk(client, PEOPLE + "?limit=7")
    last = client.get(PEOPLE + "?limit=7")
    url = last.json()["next"]
    while True:  # to the last page, then back
        body = client.get(url).json()
        if body["next"] is None:
            break
        url = body["next"]
    backward = walk(client, url, key="previous")
    assert backward == forward[::-1]
    assert "limit=7" in url


def test_other_orders_keep_their_ties_in_order(client, people):
    joined = sum(walk(client, PEOPLE + "?order=joined&limit=4"), [])
    expected = list(User.objects.order_by("-date_joined", "id").values_list("username", flat=True))
    assert joined == expected and len(joined) == 120
    by_name = sum(walk(client, PEOPLE + "?order=name&limit=200"), [])
    assert by_name == sorted(people)


def test_rows_added_meanwhile_do_not_shift_the_pages(client, people):
    first = client.get(PEOPLE + "?limit=10").json()
    User.objects.create(username="newcomer")
    second = client.get(first["next"]).json()
    assert [item["username"] for item in second["results"]] == people[10:20]


@pytest.mark.parametrize("limit", ["1", "200"])
def test_the_bounds_of_limit_are_taken(client, people, limit):
    assert len(client.get(f"{PEOPLE}?limit={limit}").json()["results"]) == min(int(limit), 120)


@pytest.mark.parametrize("limit", ["0", "201", "-1", "ten", "1.5", "", "٣", "99999999999999999999"])
def test_a_bad_limit_is_a_400_problem(client, people, limit):
    answer = client.get(f"{PEOPLE}?limit={limit}")
    assert answer.status_code == 400 and answer["Content-Type"] == "application/problem+json"
    assert answer.json()["code"] == "bad_limit" and list(answer.json()["errors"]) == ["limit"]


def cursor_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["cursor"][0]


def test_a_forged_or_foreign_cursor_is_a_400_problem(client, people):
    real = cursor_of(client.get(PEOPLE + "?limit=5").json()["next"])
    forged = signing.dumps({"o": ["-id"], "k": [1], "b": False}, salt=SALT, key="not-the-servers-key")
    changed = real[:-3] + ("AAA" if real[-3:] != "AAA" else "BBB")
    other_order = signing.dumps({"o": ["username"], "k": ["a"], "b": False}, salt=SALT, compress=True)
    bad_value = signing.dumps({"o": ["-id"], "k": ["not a number"], "b": False}, salt=SALT, compress=True)
    wrong_length = signing.dumps({"o": ["-id"], "k": [], "b": False}, salt=SALT, compress=True)
    for cursor in ("", "nonsense", forged, changed, other_order, bad_value, wrong_length, "%00", "x" * 5000):
        answer = client.get(PEOPLE, {"cursor": cursor})
        assert answer.status_code == 400, cursor
        assert answer.json()["code"] == "bad_cursor" and list(answer.json()["errors"]) == ["cursor"]
    assert client.get(PEOPLE, {"cursor": real}).status_code == 200
    assert client.get(PEOPLE, {"cursor": real, "order": "name"}).status_code == 400  # another order's list


def test_an_empty_list_is_one_empty_page(client):
    User.objects.exclude(username="olive").delete()
    assert client.get(PEOPLE).json() == {
        "results": [{"id": User.objects.get().pk, "username": "olive"}], "next": None, "previous": None}
