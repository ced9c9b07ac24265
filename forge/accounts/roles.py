"""The three groups people belong to, what each may do, and the scopes a token needs for it."""

from __future__ import annotations

from collections.abc import Iterable

from forge.errors import Forbidden, ScopeMissing

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
    "audit.view": (OPERATORS, APPROVERS, ADMINS),  # who opens the console's audit page
}

# What a token may be given; it acts within its scopes *and* its owner's current groups.
SCOPES = ("runs:read", "runs:write", "approvals:decide", "workflows:write", "governance:admin", "audit:read")
DECIDING_SCOPE = "approvals:decide"  # deciding approvals and answering reply requests
ACTION_SCOPES = {
    "run.view": "runs:read",
    "run.start": "runs:write",
    "run.cancel": "runs:write",
    "run.restart": "runs:write",
    "schedule.manage": "runs:write",
    "workflow.edit": "workflows:write",
    "governance.edit": "governance:admin",
    "killswitch.set": "governance:admin",
    "audit.view": "audit:read",
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


def has_scope(user, scope: str) -> bool:
    """Whether the token `user` came with (`user.forge_token`, set by forge/api/auth.py) holds `scope`; a person
    signed in with a session holds every scope."""
    token = getattr(user, "forge_token", None)
    return token is None or scope in token.scopes


def _allowed_by_groups(user, action: str) -> bool:
    return _active(user) and (user.is_superuser or bool(group_names(user) & set(ACTIONS[action])))


def can(user, action: str) -> bool:
    """Whether `user` may take `action` (one of ACTIONS): their groups allow it, and their token's scopes."""
    return _allowed_by_groups(user, action) and has_scope(user, ACTION_SCOPES[action])


def require(user, action: str, refusal: str) -> None:
    """Raise unless `user` may take `action`: ScopeMissing when only the token's scopes stand in the way, else
    Forbidden saying `refusal`."""
    if not _allowed_by_groups(user, action):
        raise Forbidden(refusal)
    if not has_scope(user, ACTION_SCOPES[action]):
        raise ScopeMissing(f"the token lacks the scope {ACTION_SCOPES[action]}, which this needs",
                           code="scope_missing", scope=ACTION_SCOPES[action])


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


def _may_decide(user, groups: frozenset[str]) -> bool:
    return _member_of_any(user, groups) and has_scope(user, DECIDING_SCOPE)


def may_approve(user, approvers: Iterable[str]) -> bool:
    """Whether `user` belongs to a group that may decide an approval naming `approvers` (and, with a token, it
    holds approvals:decide)."""
    return _may_decide(user, deciding_groups(approvers))


def may_reply_as_member(user, approvers: Iterable[str]) -> bool:
    """Whether `user` belongs to a group that may answer a reply request naming `approvers` (and, with a token,
    it holds approvals:decide)."""
    return _may_decide(user, replying_groups(approvers))
