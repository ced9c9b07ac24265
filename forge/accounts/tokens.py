"""API tokens and service accounts: making and revoking tokens, the Admins' longest life for them, and finding a
token by its secret (docs/design/api.md, section 4). Each change checks permission and is audited in its
transaction; the secret is answered once, by `token_create`, and never written anywhere."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from forge.accounts.models import ApiToken, ServiceAccount, TokenPolicy
from forge.accounts.roles import SCOPES, can, has_scope, require
from forge.audit import codes
from forge.audit.services import audit
from forge.errors import Conflict, Forbidden, Invalid, ScopeMissing

PREFIX = "forge_pat_"
SHOWN_CHARACTERS = 16  # of the secret, kept as `prefix` to tell tokens apart in lists
DEFAULT_DAYS = 90
MAX_POLICY_DAYS = 3650
DEFAULT_MAX_DAYS = 365
NAME_LENGTH = ApiToken._meta.get_field("name").max_length
DESCRIPTION_LENGTH = ServiceAccount._meta.get_field("description").max_length
TOUCH_EVERY = timedelta(minutes=1)  # last_used_at is written at most this often per token
ADMINS_ONLY = "only Admins manage service accounts and the token policy"


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _actor(user) -> None:
    if user is None or not user.is_authenticated or not user.is_active:
        raise Forbidden("sign in to manage tokens")


def token_policy() -> TokenPolicy:
    """The installation's token rules (its one row, or the defaults while no Admin has set them)."""
    return TokenPolicy.objects.order_by("pk").first() or TokenPolicy(max_days=DEFAULT_MAX_DAYS)


def tokens_of(user) -> QuerySet[ApiToken]:
    """`user`'s tokens, newest first (revoked and expired ones included: the list shows them as such)."""
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")


def token_for_secret(secret: str) -> ApiToken | None:
    """The token whose secret is `secret`, with its owner, whatever its state (the caller says which: expired,
    revoked); None for an unknown one."""
    if not isinstance(secret, str) or not secret.startswith(PREFIX) or len(secret) > 200:
        return None
    # An indexed equality on the digest, not a constant-time comparison: a timing difference could at most
    # reveal how much of a SHA-256 digest matched, which tells nothing about a secret with 256 random bits.
    return ApiToken.objects.select_related("user").filter(digest=digest_of(secret)).first()


def _unprintable(text: str) -> bool:
    """Control characters (NUL among them, which PostgreSQL cannot keep) and lone surrogates."""
    return any(ch < " " or ch == "\x7f" or "\ud800" <= ch <= "\udfff" for ch in text)


def _clean_name(name) -> str:
    name = name.strip() if isinstance(name, str) else ""
    if _unprintable(name):
        raise Invalid("the name has control characters; write it in plain text", code="name_invalid", field="name")
    if not name:
        raise Invalid("give the token a name: what it is for, e.g. 'CI deploys'", code="name_missing", field="name")
    if len(name) > NAME_LENGTH:
        raise Invalid(f"the name has {len(name)} characters; at most {NAME_LENGTH} are accepted",
                      code="name_too_long", field="name")
    return name


def _clean_scopes(scopes) -> list[str]:
    if not isinstance(scopes, (list, tuple)) or not scopes:
        raise Invalid(f"choose at least one scope among {', '.join(SCOPES)}", code="scopes_missing", field="scopes")
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        shown = ", ".join(repr(str(s)[:40]) for s in unknown[:3])
        raise Invalid(f"no such scope: {shown}; the scopes are {', '.join(SCOPES)}", code="scope_unknown",
                      field="scopes")
    return [s for s in SCOPES if s in scopes]


def _clean_days(days, max_days: int) -> int:
    if days is None:
        return min(DEFAULT_DAYS, max_days)
    if isinstance(days, bool) or not isinstance(days, int):
        raise Invalid("the days a token lives must be a whole number", code="days_invalid", field="days")
    if not 1 <= days <= max_days:
        raise Invalid(f"a token lives from 1 to {max_days} days (the installation's longest); {days} was asked",
                      code="days_out_of_range", field="days")
    return days


def _check_owner(user, owner):
    """Who the new token will act as: `user` themself, or a service account an Admin makes it for."""
    if owner is None or owner.pk == user.pk:
        if hasattr(user, "service_account"):
            raise Forbidden("a service account's tokens are made by Admins")
        return user
    if not hasattr(owner, "service_account"):
        raise Forbidden("a person makes their own tokens; Admins make tokens for service accounts only")
    require(user, "governance.edit", "only Admins make tokens for service accounts")
    if not owner.is_active:
        raise Invalid(f"the service account {owner.get_username()} is inactive", code="owner_inactive")
    return owner


def token_create(*, user, name: str, scopes, days: int | None = None, owner=None) -> tuple[ApiToken, str]:
    """Make a token acting as `owner` (default: `user`) for `days` (default 90) with `scopes`; returns it and its
    secret, which nothing else will ever show.

    Raises:
        Forbidden: `user` may not make a token for `owner`.
        ScopeMissing: made through a token, the new one would hold a scope that token lacks.
        Invalid: the name, scopes or days cannot be taken.
    """
    _actor(user)
    owner = _check_owner(user, owner)
    name = _clean_name(name)
    scopes = _clean_scopes(scopes)
    wider = [s for s in scopes if not has_scope(user, s)]
    if wider:  # a token must not mint a stronger one
        raise ScopeMissing(f"a token cannot make a token with scopes it lacks: {', '.join(wider)}",
                           code="scope_missing", scope=wider[0])
    with transaction.atomic():
        days = _clean_days(days, token_policy().max_days)
        secret = PREFIX + secrets.token_urlsafe(32)
        now = timezone.now()
        token = ApiToken.objects.create(user=owner, name=name, prefix=secret[:SHOWN_CHARACTERS],
                                        digest=digest_of(secret), scopes=scopes, created_at=now, created_by=user,
                                        expires_at=now + timedelta(days=days))
        audit(codes.TOKEN_CREATED, user=user, target=f"token:{token.pk}",
              detail={"name": name, "prefix": token.prefix, "scopes": scopes, "days": days,
                      "expires_at": token.expires_at.isoformat(), "owner": owner.get_username()})
    return token, secret


def token_revoke(*, user, token: ApiToken) -> ApiToken:
    """Revoke `token` now: its owner may, and Admins.

    Raises:
        Forbidden: `user` is neither its owner nor an Admin.
        Conflict: it was revoked already.
    """
    _actor(user)
    if token.user_id != user.pk:
        require(user, "governance.edit", "only the token's owner or an Admin may revoke it")
    with transaction.atomic():
        now = timezone.now()
        if not ApiToken.objects.filter(pk=token.pk, revoked_at=None).update(revoked_at=now):
            raise Conflict(f"the token {token.prefix}… was revoked already", code="already_revoked")
        token.revoked_at = now
        audit(codes.TOKEN_REVOKED, user=user, target=f"token:{token.pk}",
              detail={"name": token.name, "prefix": token.prefix, "owner": token.user.get_username()})
    return token


def service_account_create(*, user, username: str, description: str = ""):
    """Make a service account, a user with no password who acts through tokens Admins make; returns the user.

    Raises:
        Forbidden: `user` is not an Admin.
        Invalid: the name or the description cannot be taken.
        Conflict: the name is taken.
    """
    _actor(user)
    require(user, "governance.edit", ADMINS_ONLY)
    users = get_user_model()
    username = username.strip() if isinstance(username, str) else ""
    description = description.strip() if isinstance(description, str) else ""
    limit = users._meta.get_field(users.USERNAME_FIELD).max_length
    if not username or len(username) > limit:
        raise Invalid(f"a service account's name has 1 to {limit} characters", code="username_invalid",
                      field="username")
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        raise Invalid("a service account's name has letters, digits and @ . + - _ only", code="username_invalid",
                      field="username") from None
    if _unprintable(description):
        raise Invalid("the description has control characters; write it in plain text", code="description_invalid",
                      field="description")
    if len(description) > DESCRIPTION_LENGTH:
        raise Invalid(f"the description has {len(description)} characters; at most {DESCRIPTION_LENGTH} are "
                      "accepted", code="description_too_long", field="description")
    taken = Conflict(f"the name {username} is taken", code="username_taken", field="username")
    if users.objects.filter(**{f"{users.USERNAME_FIELD}__iexact": username}).exists():
        raise taken
    try:
        with transaction.atomic():
            account = users(**{users.USERNAME_FIELD: username})
            account.set_unusable_password()
            account.save()
            ServiceAccount.objects.create(user=account, description=description, created_by=user)
            audit(codes.SERVICE_ACCOUNT_CREATED, user=user, target=f"user:{username}",
                  detail={"username": username, "description": description})
    except IntegrityError:  # taken meanwhile
        raise taken from None
    return account


def token_policy_set(*, user, max_days: int) -> TokenPolicy:
    """Set the longest life of new tokens (tokens made before keep theirs).

    Raises:
        Forbidden: `user` is not an Admin.
        Invalid: `max_days` is not a whole number from 1 to 3650.
    """
    _actor(user)
    require(user, "governance.edit", ADMINS_ONLY)
    if isinstance(max_days, bool) or not isinstance(max_days, int) or not 1 <= max_days <= MAX_POLICY_DAYS:
        raise Invalid(f"the longest life of a token is a whole number of days from 1 to {MAX_POLICY_DAYS}",
                      code="max_days_invalid", field="max_days")
    with transaction.atomic():
        policy = TokenPolicy.objects.select_for_update().order_by("pk").first()
        before = policy.max_days if policy else DEFAULT_MAX_DAYS
        if policy is None:
            policy = TokenPolicy.objects.create(max_days=max_days)
        else:
            policy.max_days = max_days
            policy.save(update_fields=["max_days"])
        audit(codes.TOKEN_POLICY_CHANGED, user=user, target="token-policy",
              detail={"max_days": {"from": before, "to": max_days}})
    return policy


def token_touch(token: ApiToken, now: datetime) -> None:
    """Note that `token` was used: bookkeeping, not a person's change, so not audited; one write a minute at
    most, and the condition in the UPDATE keeps concurrent requests from writing it twice."""
    if token.last_used_at is not None and now - token.last_used_at < TOUCH_EVERY:
        return
    ApiToken.objects.filter(Q(last_used_at=None) | Q(last_used_at__lte=now - TOUCH_EVERY), pk=token.pk) \
        .update(last_used_at=now)
    token.last_used_at = now


def may_manage_accounts(user) -> bool:
    """Whether `user` is an Admin who may make service accounts and their tokens."""
    return can(user, "governance.edit")
