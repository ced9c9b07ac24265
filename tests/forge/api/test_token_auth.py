"""Signing in to the API with `Authorization: Bearer forge_pat_…` (forge/api/auth.py): a good token signs its owner
in carrying the token; an unknown, malformed, expired or revoked one, or an inactive owner, is a 401 saying which;
the last use is written at most once a minute; the event stream's plain views read the same rules."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import path
from django.utils import timezone
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from forge.accounts.models import ApiToken
from forge.accounts.tokens import token_create, token_revoke
from forge.api.auth import BearerTokenAuthentication, user_for_bearer
from forge.errors import Unauthenticated

pytestmark = pytest.mark.django_db


class WhoAmI(APIView):
    """Who the request signed in, and through which token."""

    authentication_classes = [BearerTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    def get(self, request):
        token = getattr(request.user, "forge_token", None)
        return Response({"user": request.user.get_username(), "token": token.pk if token else None,
                         "auth": request.auth.pk if request.auth else None})


urlpatterns = [path("whoami", WhoAmI.as_view())]


@pytest.fixture(autouse=True)
def whoami(settings):
    settings.ROOT_URLCONF = __name__


@pytest.fixture
def clock(monkeypatch):
    now = [timezone.now()]
    monkeypatch.setattr(timezone, "now", lambda: now[0])
    return now


def ask(client, authorization: str | None):
    return client.get("/whoami", **({"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}))


def refused(client, authorization: str | None) -> str:
    answer = ask(client, authorization)
    assert answer.status_code == 401, answer.content
    assert answer["WWW-Authenticate"] == 'Bearer realm="forge"'
    return answer.json().get("detail", "")


def test_a_token_signs_its_owner_in_carrying_it(client, operator):
    token, secret = token_create(user=operator, name="ci", scopes=["runs:read"])
    answer = ask(client, f"Bearer {secret}")
    assert answer.status_code == 200 and answer.json() == {"user": "olive", "token": token.pk, "auth": token.pk}
    assert ask(client, f"bearer  {secret} ").json()["user"] == "olive"  # the scheme's case and spaces aside


def test_a_token_is_refused_saying_why(client, operator, clock):
    live, secret = token_create(user=operator, name="live", scopes=["runs:read"])
    revoked, revoked_secret = token_create(user=operator, name="revoked", scopes=["runs:read"])
    token_revoke(user=operator, token=revoked)
    short, short_secret = token_create(user=operator, name="short", scopes=["runs:read"], days=1)
    assert "The token is unknown" in refused(client, "Bearer forge_pat_" + "A" * 43)
    assert "The token is unknown" in refused(client, f"Bearer {secret[:-2]}")
    assert "The token is unknown" in refused(client, "Bearer not-a-forge-token")
    assert "The token is unknown" in refused(client, "Bearer forge_pat_" + "x" * 10_000)
    assert "The Authorization header must be 'Bearer' and the token" in refused(client, "Bearer")
    assert "The Authorization header must be 'Bearer' and the token" in refused(client, f"Bearer {secret} {secret}")
    assert f"The token {revoked.prefix}… was revoked on " in refused(client, f"Bearer {revoked_secret}")
    clock[0] += timedelta(days=1)
    assert f"The token {short.prefix}… expired on " in refused(client, f"Bearer {short_secret}")
    assert ask(client, f"Bearer {secret}").status_code == 200
    operator.is_active = False
    operator.save()
    assert "The token's owner, olive, is inactive." in refused(client, f"Bearer {secret}")


def test_without_a_bearer_header_the_other_ways_to_sign_in_are_asked(client, operator):
    assert ask(client, None).status_code == 401
    assert ask(client, "Basic b2xpdmU6cHctb2xpdmU=").status_code == 401
    client.force_login(operator)
    answer = ask(client, None)
    assert answer.status_code == 200 and answer.json() == {"user": "olive", "token": None, "auth": None}


def test_the_last_use_is_written_at_most_once_a_minute(client, operator, clock):
    token, secret = token_create(user=operator, name="ci", scopes=["runs:read"])
    ask(client, f"Bearer {secret}")
    first = ApiToken.objects.get().last_used_at
    assert first == clock[0]
    clock[0] += timedelta(seconds=59)
    with CaptureQueriesContext(connection) as queries:
        assert ask(client, f"Bearer {secret}").status_code == 200
    assert not [q for q in queries if q["sql"].startswith("UPDATE") and "apitoken" in q["sql"]]
    assert ApiToken.objects.get().last_used_at == first
    clock[0] += timedelta(seconds=1)
    ask(client, f"Bearer {secret}")
    assert ApiToken.objects.get().last_used_at == clock[0]


def test_a_plain_view_reads_the_same_rules(operator):
    token, secret = token_create(user=operator, name="ci", scopes=["runs:read"])
    factory = RequestFactory()
    assert user_for_bearer(factory.get("/")) is None
    user = user_for_bearer(factory.get("/", HTTP_AUTHORIZATION=f"Bearer {secret}"))
    assert user == operator and user.forge_token == token
    token_revoke(user=operator, token=token)
    with pytest.raises(Unauthenticated, match="was revoked on") as refusal:
        user_for_bearer(factory.get("/", HTTP_AUTHORIZATION=f"Bearer {secret}"))
    assert refusal.value.code == "token_revoked"
    with pytest.raises(Unauthenticated, match="The token is unknown"):
        user_for_bearer(factory.get("/", HTTP_AUTHORIZATION="Bearer forge_pat_nope"))
