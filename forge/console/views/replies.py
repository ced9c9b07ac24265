"""A reply to a loop's reply request (spec section 9), from the inbox, the run page or the step panel: one POST
that calls `services.reply_give` (which checks who may answer, and audits). A refused reply changes nothing and
says why on the card, with what was typed; without JavaScript it says so at the top of the page it goes back to."""

from __future__ import annotations

from urllib.parse import parse_qsl

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_POST

from forge.runs.reads.inbox import reply_ask
from forge.console.views.actions import back, sentence
from forge.console.views.pages import require_view
from forge.console.views.said import said, sent_by_htmx
from forge.runs import services
from forge.runs.models import Approval
from forge.runs.selectors import may_decide, runs_for_user

PLACES = ("inbox", "run", "panel")  # where the card is, so a refused reply's card is drawn again as it was
NOT_UTF8 = "the reply is not UTF-8 text"


def _typed(request) -> str:
    """The reply's text, refused when the form's bytes are not UTF-8 (Django would read them as U+FFFD, and the
    run would keep a reply nobody typed)."""
    if request.content_type == "application/x-www-form-urlencoded":
        try:
            parse_qsl(request.body.decode("utf-8"), keep_blank_values=True, encoding="utf-8", errors="strict")
        except (UnicodeDecodeError, ValueError):
            raise services.ServiceError(NOT_UTF8) from None
    return request.POST.get("text", "")


@sensitive_post_parameters("text")  # an error report never repeats a reply (kept with the run, never logged)
@login_required
@require_POST
def reply_give(request, approval_id: int):
    require_view(request)
    approval = get_object_or_404(Approval.objects.filter(run__in=runs_for_user(request.user))
                                 .select_related("run__workflow", "run__started_by"), pk=approval_id)
    text = ""
    try:
        text = _typed(request)
        answered = services.reply_give(user=request.user, approval=approval, text=text)
    except (services.ServiceError, PermissionDenied) as exc:
        if sent_by_htmx(request) and approval.kind == Approval.REPLY:
            return _card_again(request, approval, problem=sentence(exc), text=text)
        messages.error(request, f"Nothing was sent. {sentence(exc)}")
        if sent_by_htmx(request):
            return said(request)  # no reply card to draw again (the id was an approval's): said at the top
    else:
        who = "taken: the next iteration starts" if answered.status == Approval.ANSWERED else "sent: the run is taking it"
        messages.success(request, f"Your reply to {approval.step} (iteration {approval.iteration}) was {who}.")
        if sent_by_htmx(request):
            return said(request)  # the card goes; the next request, if any, comes with the run's events
    return back(request, reverse("console:run", args=[approval.run_id]))


def _card_again(request, approval: Approval, *, problem: str, text: str):
    """The card as it was, saying why nothing was sent, with what was typed."""
    approval.refresh_from_db()
    place = request.POST.get("place")
    place = place if place in PLACES else "run"
    context = {"ask": reply_ask(approval), "place": place, "problem": problem, "text": text,
               "refusal": may_decide(request.user, approval), "back": request.POST.get("next", ""),
               "prefix": "panel-" if place == "panel" else ""}
    return render(request, "console/reply_card.html", context)
