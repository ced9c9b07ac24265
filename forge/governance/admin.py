from django.contrib import admin, messages

from forge.admin_views import ReadOnlyAdmin
from forge.governance.models import Agent, BudgetEnvelope, Gateway, Policy, TokenEvent


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("name", "provider", "enabled", "status", "trust_level", "max_concurrency",
                    "rate_limit_per_minute", "monthly_budget", "gateway")
    list_filter = ("provider", "enabled", "status")
    search_fields = ("name", "role")


@admin.register(Gateway)
class GatewayAdmin(admin.ModelAdmin):
    list_display = ("name", "url", "healthy", "min_trust_level", "checked_at")
    actions = ["issue_token"]

    @admin.action(description="Issue a new callback token (shown once)")
    def issue_token(self, request, queryset):
        for gateway in queryset:
            token = gateway.set_token()
            gateway.save(update_fields=["token_hash"])
            self.message_user(request, f"{gateway.name}: new token {token} (copy it now; it is stored hashed)",
                              messages.WARNING)


@admin.register(BudgetEnvelope)
class BudgetEnvelopeAdmin(admin.ModelAdmin):
    list_display = ("name", "scope", "limit", "monthly", "enabled")


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin):
    list_display = ("name", "effect", "when", "enabled", "order")
    list_editable = ("enabled", "order")


@admin.register(TokenEvent)
class TokenEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "run_id", "step", "attempt", "agent", "workflow", "tokens", "cost")
    list_filter = ("agent", "workflow")

