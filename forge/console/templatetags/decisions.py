"""`{% load decisions %}`: `{{ approval|decided }}` words a decided approval (forge.runs.decision_words)."""

from django import template

from forge.runs.decision_words import approval_words

register = template.Library()


@register.filter
def decided(approval) -> str:
    return approval_words(approval)
