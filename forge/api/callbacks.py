"""`POST /api/v1/steps/complete`: a gateway reports the result of a step it accepted (202).

Authenticated by the gateway's token (`X-Gateway-Token`, or `Authorization:
Bearer`), compared in constant time with every stored hash. The body is read
by the same rules as a gateway's synchronous reply (`engine.executors.
gateway_result`), whatever its Content-Type says, and at most 2 MiB of it is
read: a larger one, with or without a Content-Length, is a 413.

A refusal is a problem (application/problem+json, forge.errors' table) that
also says `error`, the sentence gateways have always read: 401 without a
gateway's token, 400 for a body that is no step result (`details` says why),
413 past 2 MiB, 404 for a step the run does not have, 403 for a step not sent
to this gateway.

Any answer but 2xx makes a gateway retry, so every result that was recorded,
or that can never be (a duplicate, a superseded attempt, an ended run, an
attempt that was never sent to this gateway), is acknowledged with 200 and
says what happened. Spend is recorded only for an attempt that governance
allowed to this step's agent: the step row's current dispatch, or for an
earlier one its `forge.governance.allowed` audit row (step, attempt,
iteration, agent). Both are committed before the gateway is called, so a
genuine callback always finds its record; one that finds none was never
sent and never will be.
"""

from __future__ import annotations

import logging

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from engine.executors.base import secrets_hidden
from engine.executors.gateway_result import GatewayResult, Malformed, load_json, read_result
from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.audit.services import audit
from forge.api.problems import PROBLEM_JSON, problem_response
from forge.api.schema import ProblemSerializer
from forge.errors import BadRequest, ForgeError, Forbidden, NotFound, TooLarge, Unauthenticated
from forge.governance.context import gateway_names
from forge.governance.models import Agent, Gateway
from forge.runs.models import Run, StepResult
from forge.runs.pinning import pinned_agent
from forge.runtime.agents import secret_values
from forge.runtime.completion import Completion, Outcome, complete_step
from forge.runtime.leases import Owner
from forge.runtime.queue import enqueue_advance

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 2 * 1_048_576
UNKNOWN_ATTEMPT = "unknown_attempt"


def problem(exc: ForgeError) -> Response:
    """A refusal as its problem (forge.errors' table), with `error`, the message as gateways read it."""
    exc.extra.setdefault("error", exc.message)
    return problem_response(exc)


class CompletedOut(serializers.Serializer):
    """The acknowledgement of a result: recorded, or never to be."""

    received = serializers.BooleanField(help_text="always true: the gateway may stop retrying")
    deduplicated = serializers.BooleanField(help_text="this attempt's result was recorded already")
    accepted = serializers.BooleanField(help_text="the result is fed to the run")
    outcome = serializers.ChoiceField(choices=[*(o.value for o in Outcome), UNKNOWN_ATTEMPT],
                                      help_text="what became of it (an ended run or a superseded attempt keeps "
                                                "only the cost; an attempt never sent is not recorded)")

    class Meta:
        ref_name = "StepCompleted"


class CallbackProblem(ProblemSerializer):
    """A problem, as every refusal of the API, with `error` beside `detail` for the gateways that read it."""

    error = serializers.CharField(help_text="the detail again, where gateways have always read it")
    details = serializers.ListField(child=serializers.CharField(), required=False,
                                    help_text="why the body is no step result: `field: sentence`, at most 20")

    class Meta:
        ref_name = "CallbackProblem"


def refusal(status: int, said: str) -> tuple[tuple[int, str], OpenApiResponse]:
    return (status, PROBLEM_JSON), OpenApiResponse(CallbackProblem, description=said)


REFUSALS = dict([
    refusal(400, "The body could not be read to its end, or it is no step result (`details` says why)."),
    refusal(401, "No gateway's token (X-Gateway-Token or Authorization: Bearer), or one no gateway has."),
    refusal(403, "The step's attempt was not sent to this gateway."),
    refusal(404, "The run has no such step."),
    refusal(413, "The body is larger than 2 MiB."),
])


def gateway_for(token: str) -> Gateway | None:
    found = None
    for gateway in Gateway.objects.exclude(token_hash=""):
        if gateway.token_matches(token) and found is None:  # no early exit: the time says nothing
            found = gateway
    return found


def read_body(request) -> bytes | None:
    """At most MAX_BODY_BYTES of the body, or None when it is larger.

    Not `request.body`: past DATA_UPLOAD_MAX_MEMORY_SIZE it raises, and a body
    without Content-Length (chunked, under ASGI) would become Django's 400 page.
    """
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > MAX_BODY_BYTES:
        return None
    raw = request.read(MAX_BODY_BYTES + 1)
    return None if len(raw) > MAX_BODY_BYTES else raw


def was_dispatched(row: dict, got: GatewayResult) -> bool:
    """Whether this attempt (and iteration) of the step was sent to the step's agent."""
    current = row["dispatch"] or {}
    if current.get("attempt") == got.attempt and current.get("iteration", 0) == got.iteration:
        return True
    return AuditEvent.objects.filter(run_id=got.run_id, code=codes.GOVERNANCE_ALLOWED, step=got.step,
                                     attempt=got.attempt, target=f"agent:{row['agent']}",
                                     detail__iteration=got.iteration).exists()


def sent_to(row: dict, agent: Agent, gateway: Gateway, got: GatewayResult) -> bool:
    """Whether the step's attempt may have gone to `gateway`: once the 202 is recorded (the attempt deferred to a
    gateway), only the one that took it; before, one its route tried (the worker names the one that took it only
    after the 202, which a fast callback may overtake); a step dispatched without a route: one of its agent's
    gateways as the run pinned them (a gateway added since never took one of its steps)."""
    dispatch = row["dispatch"] or {}
    route = dispatch.get("route") or {}
    if route.get("gateways"):
        taken = (row["lease_owner"] == Owner.GATEWAY and dispatch.get("attempt") == got.attempt
                 and dispatch.get("iteration", 0) == got.iteration and route.get("gateway"))
        return gateway.name == route["gateway"] if taken else gateway.name in route["gateways"]
    run = Run.objects.filter(pk=got.run_id).only("pinned").first()
    return run is not None and gateway.name in gateway_names(pinned_agent(run, agent.name, agent))


class StepCompleteApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: CompletedOut, **REFUSALS},
                   summary="A gateway reports the result of a step it accepted",
                   description="Every result recorded, or that never can be, is acknowledged with 200 (a gateway "
                               "retries any other answer); the refusals are problems that also say `error`.")
    def post(self, request):
        token = request.headers.get("X-Gateway-Token") or ""
        auth = request.headers.get("Authorization") or ""
        if not token and auth.startswith("Bearer "):
            token = auth[len("Bearer "):]
        if not token:
            return problem(Unauthenticated("send the gateway's token in X-Gateway-Token"))
        gateway = gateway_for(token)
        if gateway is None:
            return problem(Unauthenticated("the token matches no gateway"))
        try:
            raw = read_body(request._request)
        except OSError:  # the client went away mid-body (UnreadablePostError)
            return problem(BadRequest("the body could not be read to its end"))
        if raw is None:
            return problem(TooLarge("the body is larger than 2 MiB"))
        try:
            got = read_result(load_json(raw))
        except Malformed as exc:
            return problem(BadRequest("the body is not a step result",
                                      details=[f"{name}: {text}" for name, text in exc.problems[:20]]))
        row = StepResult.objects.filter(run_id=got.run_id, step=got.step).values("agent", "dispatch", "lease_owner").first()
        if row is None:
            return problem(NotFound(f"run {got.run_id} has no step {got.step!r}"))
        agent = Agent.objects.filter(name=row["agent"]).first()
        if agent is None or not sent_to(row, agent, gateway, got):
            return problem(Forbidden(f"step {got.step!r} was not sent to gateway {gateway.name!r}"))
        if not was_dispatched(row, got):
            return self.unknown_attempt(gateway, got)
        # Neither the agent's secrets nor the gateway's own token are shown, should its result repeat them.
        result = secrets_hidden(got.result, [*secret_values(agent), token])
        outcome = complete_step(Completion(got.run_id, got.step, got.attempt, got.iteration, result),
                                source=f"gateway:{gateway.name}")
        if outcome is Outcome.ACCEPTED:
            enqueue_advance(got.run_id)
        return Response({"received": True, "deduplicated": outcome is Outcome.DUPLICATE,
                         "accepted": outcome is Outcome.ACCEPTED, "outcome": outcome.value})

    @staticmethod
    def unknown_attempt(gateway: Gateway, got: GatewayResult) -> Response:
        """Acknowledged, so the gateway stops retrying what can never become valid; nothing is recorded."""
        log.warning("gateway %r reported attempt %d (iteration %d) of step %r of run %d, which was never "
                    "dispatched to it; nothing recorded", gateway.name, got.attempt, got.iteration, got.step,
                    got.run_id)
        audit(codes.STEP_UNKNOWN_ATTEMPT_RESULT, run_id=got.run_id, step=got.step, attempt=got.attempt,
              target=f"gateway:{gateway.name}",
              detail={"iteration": got.iteration, "tokens": got.result.tokens, "cost": got.result.cost},
              key=f"unknown:{got.run_id}:{got.step}:{got.attempt}:{got.iteration}")
        return Response({"received": True, "deduplicated": False, "accepted": False, "outcome": UNKNOWN_ATTEMPT})
