"""The three groups people belong to, and what each may do."""

from __future__ import annotations

from collections.abc import Iterable

OPERATORS = "Operators"
APPROVERS = "Approvers"
ADMINS = "Admins"
GROUPS = (OPERATORS, APPROVERS, ADMINS)

# action -> the groups allowed to take it (superusers may take any). Deciding approvals and answering reply
# requests are not actions here: who may depends on the step (`may_approve`, `may_reply_as_member`).
ACTIONS = {
    "run.view": (OPERATORS, APPROVERS, ADMINS),
    "run.start": (OPERATORS, ADMINS),
    "run.cancel": (OPERATORS, ADMINS),
    "run.restart": (OPERATORS, ADMINS),
    "workflow.edit": (OPERATORS, ADMINS),
    "governance.edit": (ADMINS,),
    "schedule.manage": (OPERATORS, ADMINS),
    "killswitch.set": (ADMINS,),
}


def group_names(user) -> frozenset[str]:
    if user is None or not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_forge_groups", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        user._forge_groups = cached
    return cached


def _active(user) -> bool:
    return user is not None and user.is_authenticated and user.is_active


def can(user, action: str) -> bool:
    """Whether `user` may take `action` (one of ACTIONS)."""
    if not _active(user):
        return False
    if user.is_superuser:
        return True
    return bool(group_names(user) & set(ACTIONS[action]))


def may_use_admin(user) -> bool:
    """Django admin (agents, budgets, policies, schedules, people): staff accounts and the Admins group."""
    return _active(user) and (user.is_staff or ADMINS in group_names(user))


def deciding_groups(approvers: Iterable[str]) -> frozenset[str]:
    """The groups whose members may decide an approval that names `approvers` (empty: none named).

    The named groups, or Approvers when none is named; Admins always, so that a step naming a group
    nobody is in can still be decided by the people who run the installation.
    """
    return frozenset(approvers or (APPROVERS,)) | {ADMINS}


REPLYING_BY_DEFAULT = (OPERATORS, APPROVERS)  # who answers a reply request naming no group (and the run's starter)


def replying_groups(approvers: Iterable[str]) -> frozenset[str]:
    """The groups whose members may answer a loop's reply request naming `approvers`: the named groups, or
    Operators and Approvers when none is named; Admins always (a reply is not an approval: see `may_reply` in
    forge.runs.selectors for the run's starter)."""
    return frozenset(approvers or REPLYING_BY_DEFAULT) | {ADMINS}


def _member_of_any(user, groups: frozenset[str]) -> bool:
    return _active(user) and (user.is_superuser or bool(group_names(user) & groups))


def may_approve(user, approvers: Iterable[str]) -> bool:
    """Whether `user` belongs to a group that may decide an approval naming `approvers`."""
    return _member_of_any(user, deciding_groups(approvers))


def may_reply_as_member(user, approvers: Iterable[str]) -> bool:
    """Whether `user` belongs to a group that may answer a reply request naming `approvers`."""
    return _member_of_any(user, replying_groups(approvers))
