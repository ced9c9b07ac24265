"""`{% load money %}`: `{{ amount|money }}`, every amount of money the console shows, with the precision it
has; `{% budget_refusal workflow_name as why %}`, why a budget would refuse a run of it now (or "")."""

from django import template
from django.utils import timezone

from forge.governance.budget_check import exhausted_budget
from engine.money import money_text

register = template.Library()


@register.filter
def money(value) -> str:
    return "" if value is None or value == "" else money_text(value)


@register.simple_tag
def budget_refusal(workflow: str) -> str:
    return exhausted_budget(workflow, timezone.now()) or ""
