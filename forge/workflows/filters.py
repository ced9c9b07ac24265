"""The filters of a list of workflows, as the API and the CLI read them."""

from __future__ import annotations

from forge.filters import FilterSet, TextFilter
from forge.workflows.models import Workflow

_NAME = Workflow._meta.get_field("name").max_length


class WorkflowFilter(FilterSet):
    name = TextFilter(limit=_NAME)  # exactly this name
    name_contains = TextFilter(field_name="name", lookup_expr="icontains", limit=_NAME)  # part of it, any case

    class Meta:
        model = Workflow
        fields: list[str] = []
