"""Idempotent writes: the same key and request answer the stored response again (`Idempotent-Replayed: true`),
another request with the key is 422, a key still being handled 409; keys are the owner's and last 24 hours."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.utils import timezone

from forge.api.models import IdempotencyKey
from tests.forge.api import infra_views
from tests.forge.api.infra import URLS, bearer, fresh_rate_windows, post  # noqa: F401 - the fixture is used
from tests.forge.conftest import member

pytestmark = [URLS]
GROUPS = "/api/v1/test/groups"


def made() -> int:
    return Group.objects.filter(name__contains="-").count()


@pytest.fixture
def client(operator):
    return bearer(operator)


@pytest.mark.django_db
def test_a_retry_with_the_same_key_gets_the_first_answer_and_changes_nothing(client):
    first = post(client, GROUPS, {"name": "blue"}, key="k-1")
    assert first.status_code == 201 and "Idempotent-Replayed" not in first
    again = post(client, GROUPS, {"name": "blue"}, key="k-1")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.content == first.content and again["Content-Type"] == "application/json"
    assert again["Location"] == first["Location"]
    assert again["RateLimit"]  # the rate headers are today's, not replayed
    assert made() == 1


@pytest.mark.django_db
def test_without_a_key_every_request_runs(client):
    post(client, GROUPS, {"name": "blue"})
    post(client, GROUPS, {"name": "blue"})
    assert made() == 2 and not IdempotencyKey.objects.exists()


@pytest.mark.django_db
def test_the_same_key_with_another_request_is_422(client):
    post(client, GROUPS, {"name": "blue"}, key="k-1")
    for other in (lambda: post(client, GROUPS, {"name": "red"}, key="k-1"),
                  lambda: post(client, GROUPS + "?x=1", {"name": "blue"}, key="k-1"),
                  lambda: client.delete(GROUPS, HTTP_IDEMPOTENCY_KEY="k-1")):
        answer = other()
        assert answer.status_code == 422 and answer["Content-Type"] == "application/problem+json"
        assert answer.json()["code"] == "idempotency_key_reused"
    assert made() == 1


@pytest.mark.django_db
def test_keys_are_each_owners_own(operator):
    one, two = bearer(operator), bearer(operator)
    assert post(one, GROUPS, {"name": "blue"}, key="k").status_code == 201
    assert "Idempotent-Replayed" not in post(two, GROUPS, {"name": "blue"}, key="k")  # another token
    other = bearer(member("otto", "Operators"))
    assert "Idempotent-Replayed" not in post(other, GROUPS, {"name": "blue"}, key="k")
    assert made() == 3
    assert sorted(IdempotencyKey.objects.values_list("owner", flat=True))[0].startswith("token:")


@pytest.mark.django_db
def test_a_console_session_keys_by_person_with_its_csrf_check(client, operator):
    session = Client(enforce_csrf_checks=True)  # the check parses the body before the key is read
    session.force_login(operator)
    secret = "a" * 32  # a CSRF cookie as a page would have set it, sent back in the header as the console's JS does
    session.cookies["csrftoken"] = secret
    csrf = {"HTTP_X_CSRFTOKEN": secret}
    assert post(session, GROUPS, {"name": "blue"}, key="k0").status_code == 403  # without it: refused
    first = post(session, GROUPS, {"name": "blue"}, key="k", **csrf)
    assert first.status_code == 201
    again = post(session, GROUPS, {"name": "blue"}, key="k", **csrf)
    assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert post(session, GROUPS, {"name": "red"}, key="k", **csrf).status_code == 422
    assert IdempotencyKey.objects.get().owner == f"user:{operator.pk}" and made() == 1


@pytest.mark.django_db
def test_refusals_are_stored_too_but_a_server_failure_lets_the_key_go(client):
    assert post(client, GROUPS, {"name": 1, "size": "x"}, key="bad").status_code == 400
    again = post(client, GROUPS, {"name": 1, "size": "x"}, key="bad")
    assert again.status_code == 400 and again["Idempotent-Replayed"] == "true"
    assert again["Content-Type"] == "application/problem+json"
    assert post(client, GROUPS, {"name": "busy"}, key="busy").status_code == 503
    assert not IdempotencyKey.objects.filter(key="busy").exists()
    client.raise_request_exception = False
    assert post(client, GROUPS, {"name": "boom"}, key="boom").status_code == 500
    assert not IdempotencyKey.objects.filter(key="boom").exists()


@pytest.mark.django_db
def test_reads_ignore_the_key_and_deletes_take_it(client):
    assert client.get("/api/v1/me", HTTP_IDEMPOTENCY_KEY="").status_code == 200
    assert client.delete(GROUPS, HTTP_IDEMPOTENCY_KEY="d").status_code == 204
    replay = client.delete(GROUPS, HTTP_IDEMPOTENCY_KEY="d")
    assert replay.status_code == 204 and replay["Idempotent-Replayed"] == "true"


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "x" * 256, "tab\there", "é", "line\nbreak", "\x7f"])
def test_a_bad_key_is_a_400_problem_and_nothing_runs(client, key):
    answer = post(client, GROUPS, {"name": "blue"}, key=key)
    assert answer.status_code == 400 and answer.json()["code"] == "bad_idempotency_key"
    assert made() == 0 and not IdempotencyKey.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["a", "x" * 255, " ~!\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`{|}"])
def test_keys_of_1_to_255_printable_characters_are_taken(client, key):
    assert post(client, GROUPS, {"name": "blue"}, key=key).status_code == 201
    assert post(client, GROUPS, {"name": "blue"}, key=key)["Idempotent-Replayed"] == "true"


@pytest.mark.django_db
def test_a_key_whose_request_died_unanswered_is_409_until_it_is_a_day_old(client, operator):
    post(client, GROUPS, {"name": "blue"}, key="k")
    row = IdempotencyKey.objects.get()
    IdempotencyKey.objects.filter(pk=row.pk).update(status=None, body=b"")  # died between commit and storing
    answer = post(client, GROUPS, {"name": "blue"}, key="k")
    assert answer.status_code == 409 and answer.json()["code"] == "idempotency_key_in_flight"
    assert made() == 1
    IdempotencyKey.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(hours=24, seconds=1))
    assert "Idempotent-Replayed" not in post(client, GROUPS, {"name": "blue"}, key="k")
    assert made() == 2 and IdempotencyKey.objects.get().status == 201


@pytest.mark.django_db
def test_old_keys_are_pruned_and_young_ones_kept(client):
    post(client, GROUPS, {"name": "a"}, key="old")
    post(client, GROUPS, {"name": "b"}, key="young")
    IdempotencyKey.objects.filter(key="old").update(created_at=timezone.now() - timedelta(hours=25))
    IdempotencyKey.objects.filter(key="young").update(created_at=timezone.now() - timedelta(hours=23))
    post(client, GROUPS, {"name": "c"}, key="new")
    assert sorted(IdempotencyKey.objects.values_list("key", flat=True)) == ["new", "young"]
    assert post(client, GROUPS, {"name": "b"}, key="young")["Idempotent-Replayed"] == "true"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the groups migrating made stay
def test_two_first_requests_with_one_key_run_once(operator):
    """Both requests reach the server together: the one that inserts the key runs and holds its answer until the
    other has been answered; the other, finding the key unanswered, is a 409. Then a retry gets the replay."""
    client = bearer(operator)
    start = threading.Barrier(2, timeout=60)
    answers: dict[str, object] = {}
    infra_views.WAITING["entered"].clear()
    infra_views.WAITING["release"].clear()

    def send(name: str) -> None:
        try:
            start.wait()
            answers[name] = post(client, GROUPS, {"name": "wait"}, key="race")
        finally:
            # whichever request got the key waits for the other's answer before it answers
            if name in answers and answers[name].status_code == 409:
                infra_views.WAITING["release"].set()
            connection.close()

    threads = [threading.Thread(target=send, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    infra_views.WAITING["release"].set()  # never leave a request waiting, even when the test fails
    assert not any(thread.is_alive() for thread in threads)
    statuses = sorted(answer.status_code for answer in answers.values())
    assert statuses == [201, 409], [answer.content for answer in answers.values()]
    assert made() == 1
    replay = post(client, GROUPS, {"name": "wait"}, key="race")
    assert replay.status_code == 201 and replay["Idempotent-Replayed"] == "true"
    assert made() == 1
