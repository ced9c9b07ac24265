"""The API's tokens operations (docs/design/api.md, sections 4 and 5): a person's own tokens (list, make, revoke)
and the Admins' service accounts and their tokens, through forge/accounts/tokens.py. A token's secret is in one
answer only: the one that made it."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import path
from rest_framework import serializers

from forge.accounts.roles import SCOPES
from forge.accounts.tokens import (
    DESCRIPTION_LENGTH, MAX_POLICY_DAYS, NAME_LENGTH, service_account_create, token_create, token_revoke, tokens_of)
from forge.api.base import ApiView, StrictSerializer
from forge.api.fields import Choice, Whole, Words
from forge.api.routes import by_method
from forge.errors import NotFound

MAX_ID = 2**63 - 1


class TokenOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="the token's first characters, to tell it apart")
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=SCOPES))
    owner = serializers.CharField(source="user.get_username")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True, help_text="within a minute")
    revoked_at = serializers.DateTimeField(allow_null=True)


class TokenIn(StrictSerializer):
    name = Words(max_length=NAME_LENGTH, help_text="what the token is for")
    scopes = serializers.ListField(child=Choice(choices=SCOPES), min_length=1, max_length=len(SCOPES))
    days = Whole(required=False, min_value=1, max_value=MAX_POLICY_DAYS,
                 help_text="how long it lives: 90 by default, at most the installation's longest")


class MadeOut(TokenOut):
    secret = serializers.CharField(help_text="the token itself: shown in this answer only")


def _made(token, secret: str) -> dict:
    token.secret = secret
    return MadeOut(token).data


class MyTokenListApi(ApiView):
    """My tokens, newest first, revoked and expired ones included (never their secrets)."""

    action = None  # anyone signed in: a person's own tokens
    paged = True
    Output = TokenOut

    def get(self, request):
        return self.page(tokens_of(request.user).select_related("user"))


class MyTokenCreateApi(ApiView):
    """Make a token acting as me, with some of the scopes (through a token: only scopes it holds itself). The
    answer holds the secret, which no other answer will show."""

    action = None
    secret_fields = ("secret",)
    success_status = 201
    Input = TokenIn
    Output = MadeOut

    def post(self, request):
        data = self.read(request)
        token, secret = token_create(user=request.user, name=data["name"], scopes=data["scopes"],
                                     days=data.get("days"))
        return self.answer(data=_made(token, secret))


class MyTokenRevokeApi(ApiView):
    """Revoke one of my tokens: requests with it are refused from then on."""

    action = None
    Output = TokenOut

    def delete(self, request, token_id: int):
        token = tokens_of(request.user).select_related("user").filter(pk=token_id).first() \
            if token_id <= MAX_ID else None
        if token is None:
            raise NotFound(f"You have no token {token_id}.", code="no_such_token")
        return self.answer(token_revoke(user=request.user, token=token))


class AccountOut(serializers.Serializer):
    username = serializers.CharField(source="get_username")
    description = serializers.CharField(source="service_account.description")
    created_at = serializers.DateTimeField(source="service_account.created_at")


class ServiceAccountCreateApi(ApiView):
    """Make a service account (Admins): a user with no password, who acts through the tokens Admins make for it.
    Its groups are given as anyone's, in Django admin."""

    action = "governance.edit"
    success_status = 201

    class Input(StrictSerializer):
        username = Words(max_length=150)
        description = Words(max_length=DESCRIPTION_LENGTH, required=False, default="", allow_blank=True)

    Output = AccountOut

    def post(self, request):
        data = self.read(request)
        account = service_account_create(user=request.user, username=data["username"],
                                         description=data["description"])
        return self.answer(account)


class ServiceAccountTokenCreateApi(ApiView):
    """Make a token for a service account (Admins); the answer holds its secret, once."""

    action = "governance.edit"
    secret_fields = ("secret",)
    success_status = 201
    Input = TokenIn
    Output = MadeOut

    def post(self, request, username: str):
        data = self.read(request)
        account = get_user_model().objects.filter(service_account__isnull=False, username=username[:150]).first()
        if account is None:
            raise NotFound(f"No service account is named {username[:150]!r}.", code="no_such_service_account")
        token, secret = token_create(user=request.user, owner=account, name=data["name"], scopes=data["scopes"],
                                     days=data.get("days"))
        return self.answer(data=_made(token, secret))


urlpatterns = [
    path("me/tokens", by_method(get=MyTokenListApi, post=MyTokenCreateApi), name="my-tokens"),
    path("me/tokens/<int:token_id>", MyTokenRevokeApi.as_view(), name="my-token"),
    path("service-accounts", ServiceAccountCreateApi.as_view(), name="service-accounts"),
    path("service-accounts/<str:username>/tokens", ServiceAccountTokenCreateApi.as_view(),
         name="service-account-tokens"),
]
