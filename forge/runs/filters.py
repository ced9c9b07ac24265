"""The filters of a list of runs, as the console's runs page, the API and the CLI read them."""

from __future__ import annotations

from django.contrib.auth.models import User

from forge.filters import DayFilter, FilterSet, OptionFilter, SortFilter, TextFilter
from forge.runs.models import RUN_STATUSES, Run
from forge.workflows.models import Workflow

# sort -> the column it orders by (the newest run first unless asked otherwise)
SORTS = {"id": "id", "-id": "-id", "workflow": "workflow__name", "-workflow": "-workflow__name",
         "status": "status", "-status": "-status", "created": "created_at", "-created": "-created_at"}


class RunFilter(FilterSet):
    status = OptionFilter(options=dict(RUN_STATUSES))
    workflow = TextFilter(field_name="workflow__name", limit=Workflow._meta.get_field("name").max_length)
    started_by = TextFilter(field_name="started_by__username", limit=User._meta.get_field("username").max_length)
    since = DayFilter(field_name="created_at", lookup_expr="gte")
    until = DayFilter(field_name="created_at", lookup_expr="lte", end=True)
    sort = SortFilter(sorts=SORTS, default="-id")

    class Meta:
        model = Run
        fields: list[str] = []
