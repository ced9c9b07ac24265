"""`GET /api/v1/me`: who the request signs in as, and with which token (docs/design/api.md, section 5)."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from forge.accounts.models import ServiceAccount
from forge.accounts.roles import group_names
from forge.api.base import ApiView


class MeTokenOut(serializers.Serializer):
    prefix = serializers.CharField(help_text="the token's first characters, as lists show them")
    name = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    expires_at = serializers.DateTimeField()


class MeApi(ApiView):
    """Who I am: my name, my groups, whether I am a service account, and the token I came with (null when signed
    in to the console)."""

    class Output(serializers.Serializer):
        username = serializers.CharField()
        groups = serializers.SerializerMethodField(help_text="sorted by name")
        superuser = serializers.BooleanField(source="is_superuser")
        service_account = serializers.SerializerMethodField()
        token = serializers.SerializerMethodField()

        @extend_schema_field(serializers.ListField(child=serializers.CharField()))
        def get_groups(self, user) -> list[str]:
            return sorted(group_names(user))

        def get_service_account(self, user) -> bool:
            return ServiceAccount.objects.filter(user=user).exists()

        @extend_schema_field(MeTokenOut(allow_null=True))
        def get_token(self, user) -> dict | None:
            token = getattr(user, "forge_token", None)
            return None if token is None else MeTokenOut(token).data

    def get(self, request):
        return self.answer(request.user)


urlpatterns = [path("me", MeApi.as_view(), name="api-me")]
