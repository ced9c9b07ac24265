from django import forms
from django.contrib import admin, messages
from django.db import models, transaction

from forge.admin_fields import KeptJSONField
from forge.admin_views import ReadOnlyAdmin
from forge.governance import services
from forge.governance.models import Agent, AgentGateway, BudgetEnvelope, Gateway, Policy, TokenEvent
from forge.governance.validators import overridable_in_order
from forge.runs import agent_config

# What a shell agent's config adds to its steps' sandbox (docs/sandbox.md), said where an Admin opens the network.
SHELL_CONFIG_HELP = (
    "Shell agents run each step in a sandbox without network and with limits: \"network\": true (only for agents "
    "the server's operator allows by name in the server's configuration) gives its steps the worker's own network, which reaches everything the worker reaches, 127.0.0.1 included (PostgreSQL, "
    "Redis, the console, any local service); \"limits\": {\"cpu_seconds\", \"memory_mb\", \"processes\", "
    "\"file_mb\", \"tmp_mb\", \"output_kb\"} change the defaults (see docs/sandbox.md)")


class ConfigurationAdmin(admin.ModelAdmin):
    """Configuration edited here (also through the change list's editable columns and the bulk delete
    action) changes through the services, which check permission and audit each change."""

    formfield_overrides = {models.URLField: {"assume_scheme": "https"},  # a URL typed without a scheme
                           models.JSONField: {"form_class": KeptJSONField}}

    def save_model(self, request, obj, form, change):
        services.config_save(user=request.user, instance=obj)

    def delete_model(self, request, obj):
        services.config_delete(user=request.user, instance=obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():  # the bulk action deletes all it was given or none
            for obj in queryset:
                services.config_delete(user=request.user, instance=obj)


class AgentGatewayInline(admin.TabularInline):
    """The agent's gateways in order of preference: a dispatch takes the first healthy one covering the step.
    Whoever may change the agent may change its list; the list changes through a service, audited."""

    model = AgentGateway
    fields = ("gateway", "position")
    extra = 1
    verbose_name = "gateway"
    verbose_name_plural = "gateways, in order of preference (lowest position first)"

    def has_view_permission(self, request, obj=None):
        return request.user.has_perm("forge_governance.view_agent") or self.has_change_permission(request, obj)

    def has_add_permission(self, request, obj=None):
        return request.user.has_perm("forge_governance.change_agent")

    def has_change_permission(self, request, obj=None):
        return request.user.has_perm("forge_governance.change_agent")

    def has_delete_permission(self, request, obj=None):
        return request.user.has_perm("forge_governance.change_agent")


class OverridableField(forms.MultipleChoiceField):
    """The keys ticked, in agent_config's order whatever order the browser sent them in."""

    def clean(self, value):
        return overridable_in_order(super().clean(value))


@admin.register(Agent)
class AgentAdmin(ConfigurationAdmin):
    list_display = ("name", "provider", "enabled", "status", "trust_level", "max_concurrency",
                    "rate_limit_per_minute", "monthly_budget", "gateway_list")
    list_filter = ("provider", "enabled", "status")
    search_fields = ("name", "role")
    inlines = [AgentGatewayInline]

    @admin.display(description="gateways")
    def gateway_list(self, agent):
        return ", ".join(route.gateway.name for route in agent.routes.all()) or "—"

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("routes__gateway")

    def save_formset(self, request, form, formset, change):
        if formset.model is not AgentGateway:
            return super().save_formset(request, form, formset, change)
        kept = [f.cleaned_data for f in formset.forms
                if f.cleaned_data and not f.cleaned_data.get("DELETE") and f.cleaned_data.get("gateway")]
        kept.sort(key=lambda data: data.get("position") or 0)  # stable: equal positions keep the form's order
        services.agent_gateways_set(user=request.user, agent=form.instance, gateways=[d["gateway"] for d in kept])
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "overridable":  # one checkbox per agent_config key, stored as the list of those ticked
            return OverridableField(
                choices=[(key, key) for key in agent_config.KEYS], widget=forms.CheckboxSelectMultiple,
                required=False, label="Overridable", help_text="the agent_config keys a step may set for this agent; "
                "a run whose step sets another is refused when it starts (agent_config_refused), as is a step's "
                "max_tokens above this agent's")
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "config":
            field.help_text = f"{db_field.help_text}. {SHELL_CONFIG_HELP}"
        return field


@admin.register(Gateway)
class GatewayAdmin(ConfigurationAdmin):
    list_display = ("name", "url", "healthy", "min_trust_level", "checked_at", "last_error")
    readonly_fields = ("healthy", "checked_at", "last_error", "failures")  # measured, never typed (spec 15)
    actions = ["issue_token"]

    @admin.action(description="Issue a new callback token (shown once)", permissions=["change"])
    def issue_token(self, request, queryset):
        for gateway in queryset:
            token = services.gateway_token_issue(user=request.user, gateway=gateway)
            self.message_user(request, f"{gateway.name}: new token {token} (copy it now; it is stored hashed)",
                              messages.WARNING)


@admin.register(BudgetEnvelope)
class BudgetEnvelopeAdmin(ConfigurationAdmin):
    list_display = ("name", "scope", "limit", "monthly", "enabled")


@admin.register(Policy)
class PolicyAdmin(ConfigurationAdmin):
    list_display = ("name", "effect", "when", "enabled", "order")
    list_editable = ("enabled", "order")


@admin.register(TokenEvent)
class TokenEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "run_id", "step", "attempt", "agent", "workflow", "tokens", "cost", "reserved", "settled")
    list_filter = ("settled", "agent", "workflow")
