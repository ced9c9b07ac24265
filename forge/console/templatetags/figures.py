"""`{% load figures %}`: `{{ count|figure }}`, a whole number with its thousands apart ("12,345 tokens")."""

from django import template

register = template.Library()


@register.filter
def figure(value) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return "" if value is None else str(value)
    return f"{value:,}"
