"""What an action says to a page that sent it with htmx (a decision from the inbox or the run view): the
sentences the action queued for the next page, placed at the top of this one instead (#said, base.html).
Without JavaScript the same form posts and redirects, and the next page shows them."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import render


def sent_by_htmx(request) -> bool:
    return request.headers.get("HX-Request") == "true"


def said(request):
    """The queued sentences, in the page's #said; the element that sent the form (its card) goes when all went
    well, and stays as it was, with what was typed, when something was refused."""
    queued = list(messages.get_messages(request))  # read: no later page shows them again
    response = render(request, "console/said.html", {"said": queued})
    if any(m.level >= messages.ERROR for m in queued):
        response["HX-Reswap"] = "none"
    return response
