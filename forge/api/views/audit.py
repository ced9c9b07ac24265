"""The API's audit operations (docs/design/api.md, section 5): the trail the person may read, newest first, filtered
as the console's audit page filters it (forge/audit/filters.AuditFilter), each event's detail as every page shows
it (`shown_detail`: what may be a secret redacted), never as stored."""

from __future__ import annotations

from django.urls import path

from forge.api.base import ApiView
from forge.api.serializers_schedules import AuditEventOut
from forge.audit.filters import AuditFilter
from forge.audit.selectors import audit_for_user
from forge.filters import filtered


class AuditListApi(ApiView):
    """Audit events, newest first: `run`, `actor`, `code` (a prefix: forge.approval.), `since` and `until`
    (YYYY-MM-DD or an ISO moment)."""

    action = "audit.view"
    paged = True
    ordering = ("-id",)
    Output = AuditEventOut

    def get(self, request):
        return self.page(filtered(AuditFilter, request.query_params, audit_for_user(request.user)))


urlpatterns = [
    path("audit", AuditListApi.as_view(), name="audit"),
]
