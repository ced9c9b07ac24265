"""My tokens: a person's API tokens, making one (its secret shown once, in the answer that made it) and revoking
one after a confirmation, through the tokens' services (forge/accounts/tokens.py).

The page's forms post with htmx and swap the page's body in place, so a reload reads the list again and the
secret is gone; without scripts, a post answers the whole page the same way."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache

from forge.accounts.roles import SCOPES
from forge.accounts.tokens import DEFAULT_DAYS, token_create, token_policy, token_revoke, tokens_of
from forge.console.views.pages import require_view
from forge.console.views.said import sent_by_htmx
from forge.errors import ForgeError

SCOPE_WORDS = {  # a write scope includes the reads it needs (forge.accounts.roles.SCOPE_INCLUDES)
    "runs:read": "see runs, their steps, logs and events, and the workflows, schedules and approvals",
    "runs:write": "start, cancel and restart runs; manage schedules (includes runs:read)",
    "approvals:decide": "see and decide the approvals and reply requests you may answer (not their runs)",
    "workflows:write": "see workflows, save versions and edit drafts (not their runs)",
    "governance:admin": "agents, gateways, budgets, policies, the kill switch (Admins)",
    "audit:read": "read the audit trail",
}
MAX_FIELD = 200  # longer than any valid value: a longer one is refused before it is read further


@never_cache  # the answer that shows a secret must not be kept by the browser or a proxy
@login_required
def tokens_page(request):
    require_view(request)
    policy = token_policy()
    state = {"errors": [], "said": "", "secret": "", "made": None, "confirm": None,
             "form": {"name": "", "scopes": [], "days": str(min(DEFAULT_DAYS, policy.max_days))}}
    status = 200
    if request.method == "POST":
        op = request.POST.get("op", "")
        if op == "make":
            status = _make(request, state, policy.max_days)
        elif op == "revoke":
            status = _revoke(request, state)
        else:
            state["errors"].append("Nothing changed: the form did not say whether to make or revoke a token.")
            status = 400
    if status == 302 and not sent_by_htmx(request):  # revoked: the list is read again, saying so
        messages.success(request, state["said"])
        return redirect("console:tokens")
    now = timezone.now()
    rows = [{"token": t, "expired": t.expires_at <= now} for t in tokens_of(request.user)]
    context = {"nav": "tokens", "rows": rows, "scopes": [(s, SCOPE_WORDS[s]) for s in SCOPES],
               "max_days": policy.max_days, **state}
    if sent_by_htmx(request):  # htmx swaps only a 2xx answer: the words inside say what was refused
        return render(request, "console/tokens.html#body", context)
    return render(request, "console/tokens.html", context, status=status)


def _make(request, state: dict, max_days: int) -> int:
    name = request.POST.get("name", "")[:MAX_FIELD + 1]
    scopes = request.POST.getlist("scopes")[:len(SCOPES) + 1]
    days_text = request.POST.get("days", "").strip()[:MAX_FIELD]
    state["form"] = {"name": name[:MAX_FIELD], "scopes": [s for s in scopes if s in SCOPES], "days": days_text}
    if not days_text:
        state["errors"].append(f"Nothing was made: say for how many days the token lives (1 to {max_days}).")
        return 400
    if not days_text.isascii() or not days_text.isdigit() or len(days_text) > 6:
        state["errors"].append(f"Nothing was made: the days must be a whole number from 1 to {max_days}; "
                               f"{days_text[:20]!r} is not one.")
        return 400
    try:
        token, secret = token_create(user=request.user, name=name, scopes=scopes, days=int(days_text))
    except ForgeError as exc:
        state["errors"].append(f"Nothing was made: {exc.message}.")
        return 400
    state.update(made=token, secret=secret, form={"name": "", "scopes": [], "days": str(min(DEFAULT_DAYS, max_days))})
    return 201  # the page itself, not a redirect: the secret is in this answer and kept nowhere


def _revoke(request, state: dict) -> int:
    token = _own_token(request)
    if token is None:
        state["errors"].append("Nothing was revoked: you have no such token.")
        return 404
    if request.POST.get("confirm") != "yes":
        state["confirm"] = token
        return 200
    try:
        token_revoke(user=request.user, token=token)
    except ForgeError as exc:
        state["errors"].append(f"Nothing was revoked: {exc.message}.")
        return 409
    state["said"] = f"Revoked {token.name} ({token.prefix}…): requests with it are refused from now on."
    return 302


def _own_token(request):
    given = request.POST.get("token", "")
    if not given.isascii() or not given.isdigit() or len(given) > 18:
        return None
    return tokens_of(request.user).filter(pk=int(given)).first()
