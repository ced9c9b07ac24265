"""`POST /api/v1/steps/complete`: a gateway reports the result of a step it accepted (202).

Authenticated by the gateway's token (`X-Gateway-Token`, or `Authorization:
Bearer`), compared in constant time with every stored hash. Any answer but
2xx makes a gateway retry, so every result that was recorded, or that can
never be (a duplicate, a superseded attempt, an ended run), is acknowledged
with 200 and says what happened.
"""

from __future__ import annotations

import json
import math

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from engine.executors import StepResult as Result
from forge.governance.models import Agent, Gateway
from forge.runs.completion import Completion, Outcome, complete_step
from forge.runs.models import StepResult
from forge.runs.tasks import enqueue_advance

MAX_BODY_BYTES = 2 * 1_048_576


class StepCompleteBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    run_id: int = Field(ge=1)
    step: str = Field(min_length=1, max_length=64)
    attempt: int = Field(ge=1)
    iteration: int = Field(default=0, ge=0)
    ok: bool
    outputs: dict | None = None
    stdout: str = Field(default="", max_length=MAX_BODY_BYTES)
    error: str | None = Field(default=None, max_length=10_000)
    error_code: str | None = Field(default=None, max_length=64)
    tokens: int = Field(default=0, ge=0, le=2**31 - 1)
    cost: float = Field(default=0.0, ge=0.0, le=10**9)

    @field_validator("run_id", mode="before")
    @classmethod
    def _echoed_id(cls, value):
        # Dispatch sends the run id as text; a gateway that echoes it back is answering correctly.
        if isinstance(value, str) and value.isascii() and value.isdigit():
            return int(value)
        return value

    @field_validator("cost", mode="before")
    @classmethod
    def _finite(cls, value):
        if isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("cost must be a finite number")
        return value


def problem(status: int, message: str, **extra) -> Response:
    return Response({"error": message, **extra}, status=status)


def describe(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors()[:20]]


def gateway_for(token: str) -> Gateway | None:
    found = None
    for gateway in Gateway.objects.exclude(token_hash=""):
        if gateway.token_matches(token) and found is None:  # no early exit: the time says nothing
            found = gateway
    return found


class StepCompleteApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT},
                   summary="A gateway reports the result of a step it accepted")
    def post(self, request):
        token = request.headers.get("X-Gateway-Token") or ""
        auth = request.headers.get("Authorization") or ""
        if not token and auth.startswith("Bearer "):
            token = auth[len("Bearer "):]
        if not token:
            return problem(401, "send the gateway's token in X-Gateway-Token")
        gateway = gateway_for(token)
        if gateway is None:
            return problem(401, "the token matches no gateway")
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > MAX_BODY_BYTES:
            return problem(413, "the body is larger than 2 MiB")
        raw = request.body  # a body without Content-Length is read, then measured
        if len(raw) > MAX_BODY_BYTES:
            return problem(413, "the body is larger than 2 MiB")
        try:
            data = json.loads(raw)
        except ValueError:
            return problem(400, "the body is not JSON")
        try:
            body = StepCompleteBody.model_validate(data)
        except ValidationError as exc:
            return problem(400, "the body is not a step result", details=describe(exc))
        agent = StepResult.objects.filter(run_id=body.run_id, step=body.step).values_list("agent", flat=True).first()
        if agent is None:
            return problem(404, f"run {body.run_id} has no step {body.step!r}")
        if not Agent.objects.filter(name=agent, gateway=gateway).exists():
            return problem(403, f"step {body.step!r} was not sent to gateway {gateway.name!r}")
        result = Result(ok=body.ok, outputs=body.outputs, stdout=body.stdout, error=body.error,
                        error_code=body.error_code or (None if body.ok else "agent_error"), tokens=body.tokens,
                        cost=body.cost)
        outcome = complete_step(Completion(body.run_id, body.step, body.attempt, body.iteration, result),
                                source=f"gateway:{gateway.name}")
        if outcome is Outcome.ACCEPTED:
            enqueue_advance(body.run_id)
        return Response({"received": True, "deduplicated": outcome is Outcome.DUPLICATE,
                         "accepted": outcome is Outcome.ACCEPTED, "outcome": outcome.value})
