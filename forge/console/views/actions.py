"""What people do from the console: each a POST that calls one service (which checks permission and audits),
then goes back to the page with what happened in words. A refusal changes nothing and says why."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from engine.interpreter import DECISIONS
from forge.accounts.roles import can
from forge.console.views.pages import require_view
from forge.console.views.said import said, sent_by_htmx
from forge.errors import Stale
from forge.runs import services
from forge.runs.decision_words import flash_words
from forge.runs.models import Approval
from forge.runs.restart_plan import restart_plan
from forge.runs.selectors import runs_for_user

MAX_TEXT = 2000


def back(request, fallback: str):
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return HttpResponseRedirect(target)  # not redirect(), which would read "nan" as the name of a URL
    return redirect(fallback)


def _text(request, name: str) -> str:
    """A free-text field, whole: one too long is refused, not cut, so what is kept is what was typed."""
    value = request.POST.get(name, "")
    if len(value) > MAX_TEXT:
        raise services.ServiceError(f"The {name} has {len(value)} characters; at most {MAX_TEXT} are accepted.")
    return value


def sentence(exc: Exception) -> str:
    """A refusal as a person reads it: a capital first letter and a full stop."""
    text = str(exc).strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _run(request, run_id: int):
    require_view(request)
    return get_object_or_404(runs_for_user(request.user), pk=run_id)


@login_required
@require_POST
def run_cancel(request, run_id: int):
    run = _run(request, run_id)
    try:
        services.run_cancel(user=request.user, run=run, reason=_text(request, "reason"))
        messages.success(request, f"Run {run.pk} is being cancelled: its running steps are stopped.")
    except (services.ServiceError, PermissionDenied) as exc:
        messages.error(request, sentence(exc))
    return redirect("console:run", run.pk)


@login_required
@require_POST
def approval_decide(request, approval_id: int):
    require_view(request)
    approval = get_object_or_404(Approval.objects.filter(run__in=runs_for_user(request.user)), pk=approval_id)
    decision = request.POST.get("decision", "")
    allowed = list(approval.options or DECISIONS)
    if decision not in allowed:
        messages.error(request, f"Nothing was decided: choose one of {', '.join(allowed)}.")
    else:
        try:
            decided = services.approval_decide(user=request.user, approval=approval, decision=decision,
                                               comment=_text(request, "comment"))
            say = messages.error if decided.status == Approval.EXPIRED else messages.success
            say(request, flash_words(decision, decided))
        except (services.ServiceError, PermissionDenied) as exc:
            messages.error(request, sentence(exc))
    if sent_by_htmx(request):
        return said(request)
    return back(request, reverse("console:run", args=[approval.run_id]))


@login_required
def run_restart(request, run_id: int):
    """GET shows the plan; POST starts the restart, refused if the plan is no longer the one shown."""
    run = _run(request, run_id)
    step = (request.POST if request.method == "POST" else request.GET).get("step", "")
    try:
        plan = restart_plan(run, step)
    except ValueError:
        messages.error(request, f"The workflow has no step {step[:64]!r}.")
        return redirect("console:run", run.pk)
    if request.method == "POST":
        try:
            new = services.run_restart(user=request.user, run=run, step=step, plan=request.POST.get("plan", ""))
        except Stale as exc:
            messages.error(request, exc.message)
            return redirect(f"{reverse('console:restart', args=[run.pk])}?{urlencode({'step': step})}")
        except (services.ServiceError, PermissionDenied) as exc:
            messages.error(request, sentence(exc))
            return redirect("console:run", run.pk)
        messages.success(request, f"Run {new.pk} restarts run {run.pk} from {step}.")
        return redirect("console:run", new.pk)
    return render(request, "console/restart.html", {"nav": "runs", "run": run, "plan": plan,
                                                    "refusal": restart_refusal(request.user, run)})


def restart_refusal(user, run) -> str | None:
    """Why `user` may not restart `run` now, in words, or None: the plan is shown either way, the button only
    to those who may press it."""
    if not can(user, "run.restart"):
        return "Only Operators and Admins restart runs: you may read the plan, not start it."
    if not run.finished:
        return f"Run {run.pk} is still {run.status}: only an ended run can be restarted."
    return None
