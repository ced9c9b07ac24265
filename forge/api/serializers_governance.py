"""How the API reads and shows governance configuration: agents, gateways, budgets, policies and step library
entries. Inputs are built from the models' own fields (their lengths, ranges, choices and nullability), so the
API takes what the admin's forms take; the models' `clean` and the services check the rest.

Nothing secret is answered: a gateway's token hash never (its `has_token` says whether one is set), and every row
as the audit trail shows it (engine.secrets.redact_secrets: an environment or header value, a URL's password or
query). A redacted value sent back as it was answered keeps the stored value (forge/api/fields.restore_redacted)."""

from __future__ import annotations

from typing import Any

from django.db import models
from rest_framework import serializers

from engine.secrets import redact_secrets
from forge.api.base import StrictSerializer
from forge.api.fields import Choice, Flag, KeptJson, Number, Whole, Words
from forge.governance.models import Agent, BudgetEnvelope, Gateway, Policy
from forge.workflows.models import StepLibraryEntry

MAX_TEXT = 10_000  # a policy's expression, a library entry's description: columns without a length of their own
MAX_GATEWAYS = 50  # gateways in one agent's list
RANGES = {models.PositiveSmallIntegerField: (0, 32767), models.PositiveIntegerField: (0, 2**31 - 1),
          models.IntegerField: (-2**31, 2**31 - 1)}


def input_field(field: models.Field) -> serializers.Field:
    """The strict input field of a model field: required on create when the model has no default for it."""
    common: dict[str, Any] = {"required": not (field.has_default() or field.blank or field.null),
                              "help_text": str(field.help_text) or None}
    if field.null:
        common["allow_null"] = True
    if field.choices:
        return Choice(choices=[value for value, _ in field.choices], **common)
    if isinstance(field, models.BooleanField):
        return Flag(**common)
    if isinstance(field, models.JSONField):
        return KeptJson(**common)
    if isinstance(field, models.FloatField):
        return Number(**common)
    for kind, (low, high) in RANGES.items():
        if isinstance(field, kind):
            return Whole(min_value=low, max_value=high, **common)
    if isinstance(field, (models.CharField, models.TextField)):
        return Words(max_length=field.max_length or MAX_TEXT, allow_blank=field.blank, **common)
    raise TypeError(f"no input field for {field!r}")  # a new kind of column: say how the API takes it


def model_input(model: type[models.Model], names: tuple[str, ...], **more: serializers.Field):
    """A StrictSerializer of `names` of `model`'s fields, and `more`."""
    fields = {name: input_field(model._meta.get_field(name)) for name in names}
    return type(f"{model.__name__}In", (StrictSerializer,), {**fields, **more})


class Shown(serializers.Serializer):
    """A row as the audit trail shows its fields: what may be a secret redacted."""

    def to_representation(self, instance):
        return redact_secrets(super().to_representation(instance))


AGENT_FIELDS = ("name", "provider", "config", "overridable", "enabled", "status", "role", "trust_level",
                "required_context_trust", "max_concurrency", "rate_limit_per_minute", "monthly_budget",
                "requires_approval", "estimated_cost")
GATEWAY_FIELDS = ("name", "url", "min_trust_level", "capabilities", "health_url", "cancel_url")
BUDGET_FIELDS = ("name", "scope", "limit", "monthly", "enabled")
POLICY_FIELDS = ("name", "when", "effect", "message", "enabled", "order")
LIBRARY_FIELDS = ("name", "description", "definition")

GatewayNames = serializers.ListField(
    child=Words(max_length=Gateway._meta.get_field("name").max_length), max_length=MAX_GATEWAYS, required=False,
    help_text="the names of the gateways its steps go to, in order of preference")
AgentIn = model_input(Agent, AGENT_FIELDS, gateways=GatewayNames)
GatewayIn = model_input(Gateway, GATEWAY_FIELDS)
BudgetIn = model_input(BudgetEnvelope, BUDGET_FIELDS)
PolicyIn = model_input(Policy, POLICY_FIELDS)
LibraryIn = model_input(StepLibraryEntry, LIBRARY_FIELDS)


class AgentOut(Shown):
    id = serializers.IntegerField()
    name = serializers.CharField()
    provider = serializers.CharField()
    config = serializers.JSONField(help_text="secrets redacted (environment values, a URL's password or query)")
    overridable = serializers.ListField(child=serializers.CharField())
    enabled = serializers.BooleanField()
    status = serializers.CharField()
    role = serializers.CharField()
    trust_level = serializers.IntegerField()
    required_context_trust = serializers.IntegerField()
    max_concurrency = serializers.IntegerField(allow_null=True)
    rate_limit_per_minute = serializers.IntegerField(allow_null=True)
    monthly_budget = serializers.FloatField(allow_null=True)
    requires_approval = serializers.BooleanField()
    estimated_cost = serializers.FloatField()
    gateways = serializers.SerializerMethodField(help_text="its gateways' names, in order of preference")

    def get_gateways(self, agent) -> list[str]:
        return [route.gateway.name for route in agent.routes.all()]  # prefetched: routes__gateway


class GatewayOut(Shown):
    id = serializers.IntegerField()
    name = serializers.CharField()
    url = serializers.CharField()
    min_trust_level = serializers.IntegerField()
    capabilities = serializers.JSONField()
    health_url = serializers.CharField()
    cancel_url = serializers.CharField()
    has_token = serializers.SerializerMethodField(help_text="a callback token is set (it is never shown again)")
    healthy = serializers.BooleanField()
    checked_at = serializers.DateTimeField(allow_null=True)
    last_error = serializers.CharField()
    failures = serializers.IntegerField()

    def get_has_token(self, gateway) -> bool:
        return bool(gateway.token_hash)


class BudgetOut(Shown):
    id = serializers.IntegerField()
    name = serializers.CharField()
    scope = serializers.CharField()
    limit = serializers.FloatField()
    monthly = serializers.BooleanField()
    enabled = serializers.BooleanField()


class PolicyOut(Shown):
    id = serializers.IntegerField()
    name = serializers.CharField()
    when = serializers.CharField()
    effect = serializers.CharField()
    message = serializers.CharField()
    enabled = serializers.BooleanField()
    order = serializers.IntegerField()


class LibraryOut(Shown):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    definition = serializers.JSONField()
    updated_at = serializers.DateTimeField()


class TokenIssuedOut(serializers.Serializer):
    gateway = serializers.CharField()
    token = serializers.CharField(help_text="the gateway's new callback token: shown in this answer only")
