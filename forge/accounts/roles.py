"""The three groups people belong to, and what each may do."""

from __future__ import annotations

OPERATORS = "Operators"
APPROVERS = "Approvers"
ADMINS = "Admins"
GROUPS = (OPERATORS, APPROVERS, ADMINS)

# action -> the groups allowed to take it (superusers may take any)
ACTIONS = {
    "run.start": (OPERATORS, ADMINS),
    "run.cancel": (OPERATORS, ADMINS),
    "run.restart": (OPERATORS, ADMINS),
    "approval.decide": (APPROVERS, ADMINS),
    "workflow.edit": (OPERATORS, ADMINS),
    "governance.edit": (ADMINS,),
}


def group_names(user) -> frozenset[str]:
    if user is None or not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_forge_groups", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        user._forge_groups = cached
    return cached


def can(user, action: str) -> bool:
    """Whether `user` may take `action` (one of ACTIONS)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    return bool(group_names(user) & set(ACTIONS[action]))
