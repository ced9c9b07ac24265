"""The filters of the audit trail, as the console's audit page, the API and the CLI read them."""

from __future__ import annotations

from forge.audit.models import AuditEvent
from forge.filters import DayFilter, FilterSet, NumberFilter, TextFilter

_LENGTH = {name: AuditEvent._meta.get_field(name).max_length for name in ("actor", "code")}


class AuditFilter(FilterSet):
    run = NumberFilter(field_name="run_id")
    actor = TextFilter(limit=_LENGTH["actor"])
    code = TextFilter(lookup_expr="startswith", limit=_LENGTH["code"])  # a prefix: forge.approval.
    since = DayFilter(field_name="at", lookup_expr="gte")
    until = DayFilter(field_name="at", lookup_expr="lte", end=True)

    class Meta:
        model = AuditEvent
        fields: list[str] = []
