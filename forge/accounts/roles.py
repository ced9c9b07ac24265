"""The three groups people belong to, what each may do, and the scopes a token needs for it."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from forge.errors import Forbidden, ScopeMissing

OPERATORS = "Operators"
APPROVERS = "Approvers"
ADMINS = "Admins"
GROUPS = (OPERATORS, APPROVERS, ADMINS)

# action -> the groups allowed to take it (superusers may take any). Deciding approvals and answering reply
# requests are not actions here: who may depends on the step (`may_approve`, `may_reply_as_member`).
ACTIONS = {
    "run.view": (OPERATORS, APPROVERS, ADMINS),
    "workflow.view": (OPERATORS, APPROVERS, ADMINS),  # the workflows' pages, versions and YAML
    "approval.view": (OPERATORS, APPROVERS, ADMINS),  # the inbox and an approval (which ones: forge.runs.selectors)
    "killswitch.view": (OPERATORS, APPROVERS, ADMINS),
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

# What a scope includes besides itself: a write scope includes the reads it needs to act, as a GitHub fine-grained
# token's "read and write" includes read. `workflows:read`, `approvals:read` and `killswitch:read` are given to no
# token by name, only with the scopes here: deciding approvals reads the approvals (not their runs), editing
# workflows reads the workflows (not their runs), the kill switch's setters read it.
SCOPE_INCLUDES = {
    "runs:read": ("workflows:read", "approvals:read", "killswitch:read"),  # a run is read with these
    "runs:write": ("runs:read",),
    "approvals:decide": ("approvals:read",),
    "workflows:write": ("workflows:read",),
    "governance:admin": ("killswitch:read",),
    "audit:read": (),
}
ACTION_SCOPES = {
    "run.view": "runs:read",
    "workflow.view": "workflows:read",
    "approval.view": "approvals:read",
    "killswitch.view": "killswitch:read",
    "run.start": "runs:write",
    "run.cancel": "runs:write",
    "run.restart": "runs:write",
    "schedule.manage": "runs:write",
    "workflow.edit": "workflows:write",
    "governance.edit": "governance:admin",
    "killswitch.set": "governance:admin",
    "audit.view": "audit:read",
}


def included(scopes: Iterable[str]) -> frozenset[str]:
    """`scopes` with everything they include (SCOPE_INCLUDES, followed to the end)."""
    return _included(frozenset(scopes))


@cache  # a few dozen sets of the six scopes; asked for each row an inbox checks
def _included(scopes: frozenset[str]) -> frozenset[str]:
    found, todo = set(), list(scopes)
    while todo:
        scope = todo.pop()
        if scope not in found:
            found.add(scope)
            todo.extend(SCOPE_INCLUDES.get(scope, ()))
    return frozenset(found)


def scopes_giving(scope: str) -> list[str]:
    """The scopes a token may be given that include `scope` (itself first when it is one), for a refusal to name."""
    return sorted((s for s in SCOPES if scope in included((s,))), key=lambda s: (s != scope, SCOPES.index(s)))


def scope_missing(scope: str) -> ScopeMissing:
    """The refusal of a token lacking `scope`: it names the scopes that would give it."""
    giving = scopes_giving(scope)
    said = giving[0] if len(giving) == 1 else f"{', '.join(giving[:-1])} or {giving[-1]}"
    return ScopeMissing(f"the token lacks the scope {said}, which this needs", code="scope_missing",
                        scope=giving[0], scopes=giving)


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
    """Whether the token `user` came with (`user.forge_token`, set by forge/api/auth.py) holds `scope` or a scope
    that includes it (SCOPE_INCLUDES); a person signed in with a session holds every scope."""
    token = getattr(user, "forge_token", None)
    return token is None or scope in included(token.scopes)


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
        raise scope_missing(ACTION_SCOPES[action])


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
