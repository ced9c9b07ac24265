"""The API's events operations (docs/design/api.md, section 5): a run's events after an id, as pages of JSON or
as a live stream of Server-Sent Events (forge/api/sse.py) for a client that accepts text/event-stream."""

from __future__ import annotations

import json
import re

from django.http import HttpResponse
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from forge.api import sse
from forge.api.base import ApiView
from forge.runs.reads import stream
from forge.errors import BadRequest, Forbidden, NotFound

MAX_ID = 2**63 - 1  # the largest id a database hands out
PAGE, MAX_PAGE = 100, stream.CHUNK
DIGITS = re.compile(r"[0-9]{1,20}")


class EventOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField(help_text="what it tells: run, step, approval, child, governance, gateway, rejected, "
                                           "artifact_refused (the `event:` of the stream)")
    step = serializers.CharField(help_text="the step's id, empty for the run's own events")
    data = serializers.JSONField()
    at = serializers.DateTimeField()


class EventPageOut(serializers.Serializer):
    events = EventOut(many=True)
    last_id = serializers.IntegerField(help_text="the last event's id (or `after` when none came): the next `after`")
    ended = serializers.BooleanField(help_text="the run has ended and this page holds its last event")


def id_in(value: str, name: str) -> int:
    """A client's event id: decimal digits, 0 to 2^63-1; anything else is a 400 naming `name`."""
    if not DIGITS.fullmatch(value) or int(value) > MAX_ID:
        raise BadRequest(f"{name} must be an event id: digits, from 0 to {MAX_ID}", code="bad_event_id")
    return int(value)


def after_of(request) -> int:
    """The id to read after: Last-Event-ID (a reconnecting EventSource sends it with the first URL, `after`
    included) before `?after=`; 0, from the start, without either."""
    header = request.META.get("HTTP_LAST_EVENT_ID")
    if header:  # an empty one is the spec's "no id yet"
        return id_in(header, "Last-Event-ID")
    return id_in(request.query_params.get("after", "0"), "after")


def limit_of(request) -> int:
    value = request.query_params.get("limit", str(PAGE))
    if not DIGITS.fullmatch(value) or not 1 <= int(value) <= MAX_PAGE:
        raise BadRequest(f"limit must be a whole number from 1 to {MAX_PAGE}", code="bad_limit")
    return int(value)


def events_page(run_id: int, after: int, limit: int) -> dict:
    """Up to `limit` events after `after`, the last id, and whether the run ended with the last of them."""
    ended = stream.run_ended(run_id)  # read first: the events read next then hold the final round's
    found = stream.event_texts(run_id, after, limit + 1)
    page = found[:limit]
    return {"events": json.loads("[" + ", ".join(text for _, _, text in page) + "]"),
            "last_id": page[-1][0] if page else after, "ended": ended and len(found) <= limit}


class RunEventsApi(ApiView):
    """`GET /api/v1/runs/{id}/events`: the run's events after an id."""

    action = "run.view"
    Output = EventPageOut

    def perform_content_negotiation(self, request, force=False):
        # The stream is no DRF rendering: a refusal before it starts is a problem in JSON.
        if sse.wants_event_stream(request.META.get("HTTP_ACCEPT", "")):
            return JSONRenderer(), JSONRenderer.media_type
        return super().perform_content_negotiation(request, force)

    @extend_schema(
        operation_id="run_events",
        summary="A run's events after an id: pages of JSON, or live as Server-Sent Events",
        description=(
            "With `Accept: text/event-stream`, a stream of the run's events after `Last-Event-ID` (or `after`), "
            "then live, ending after the run's last event: each one `id: <event id>`, `event: <kind>`, "
            "`data: <the event as JSON>`; `event: snapshot` (the run's and its steps' state) instead of a replay "
            "longer than the server replays; `: keep-alive` comments while idle. 204 when the run has ended and "
            "nothing came after the id. Otherwise a page of at most `limit` events after `after`."),
        parameters=[
            OpenApiParameter("after", int, description="the last event id the client has (0: from the start)"),
            OpenApiParameter("limit", int, description=f"events per page (JSON), 1 to {MAX_PAGE}, {PAGE} by default"),
            OpenApiParameter("Last-Event-ID", str, OpenApiParameter.HEADER,
                             description="the stream's resume point; takes precedence over `after`"),
        ],
        responses={(200, "application/json"): EventPageOut, (200, sse.MEDIA_TYPE): OpenApiTypes.STR,
                   204: None},
    )
    def get(self, request, pk: int):
        run_id = pk
        after = after_of(request)
        verdict = stream.may_watch(request.user, run_id) if run_id <= MAX_ID else stream.MISSING
        if verdict == stream.MISSING:
            raise NotFound(f"there is no run {run_id}", code="no_such_run")
        if verdict is not None:
            raise Forbidden("your groups do not allow watching runs")
        if not sse.wants_event_stream(request.META.get("HTTP_ACCEPT", "")):
            return Response(events_page(run_id, after, limit_of(request)))
        if stream.run_ended(run_id) and not stream.event_texts(run_id, after, 1):
            return HttpResponse(status=204)  # nothing more will come: EventSource stops reconnecting
        return sse.event_stream(run_id, after, user_id=request.user.pk, allowed=sse.allowed_for(request, run_id))


urlpatterns = [
    path("runs/<int:pk>/events", RunEventsApi.as_view(), name="run-events"),
]
