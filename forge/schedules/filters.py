"""The filters of a list of schedules, as the API and the CLI read them."""

from __future__ import annotations

from django.contrib.auth.models import User

from forge.filters import FilterSet, OptionFilter, TextFilter
from forge.schedules.models import Schedule
from forge.workflows.models import Workflow

ENABLED = {"yes": True, "no": False}  # paused schedules are "no"


class ScheduleFilter(FilterSet):
    workflow = TextFilter(field_name="workflow__name", limit=Workflow._meta.get_field("name").max_length)
    owner = TextFilter(field_name="owner__username", limit=User._meta.get_field("username").max_length)
    enabled = OptionFilter(options=ENABLED, method="by_enabled")

    class Meta:
        model = Schedule
        fields: list[str] = []

    def by_enabled(self, schedules, name, value):
        return schedules.filter(enabled=ENABLED[value])
