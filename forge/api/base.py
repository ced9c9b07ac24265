"""The base of every API operation (docs/design/api.md, section 5): authentication, the action it needs,
strict inputs, idempotent writes, rate limits, cursor pages and problem answers.

An operation is one `ApiView` subclass with nested serializers and one handler::

    class RunCancelApi(ApiView):
        action = "run.cancel"
        success_status = 202

        class Input(StrictSerializer):
            reason = serializers.CharField(max_length=500, required=False)

        class Output(serializers.Serializer):
            id = serializers.IntegerField()

        def post(self, request, pk):
            data = self.read(request)                     # Input's validated data, or a 400 problem
            run = run_cancel(user=request.user, run=..., **data)  # services raise ForgeError kinds
            return self.answer(run)                       # Output(run).data, success_status

    class RunListApi(ApiView):
        action = "run.view"
        paged = True                                      # the schema shows a page of Output
        Output = RunOut

        def get(self, request):
            return self.page(runs_for_user(request.user))  # {results, next, previous}, newest id first

Refusals are raised, never returned: `raise NotFound("No run 12.")` (forge.errors) becomes its problem+json.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from forge.accounts import roles
from forge.api import idempotency
from forge.api.pagination import CursorPagination
from forge.api.parsers import StrictJSONParser
from forge.api.problems import validation_problem
from forge.api.serializers import StrictSerializer
from forge.api.throttles import ApiRateThrottle, rate_limit_headers

__all__ = ["ApiView", "StrictSerializer"]


class ApiView(APIView):
    """One operation.

    `action` is what it needs, read by the authorisation matrix and checked before the handler runs:
    a `forge.accounts.roles` action (`"run.start"`: the person's groups and the token's scope), a scope
    (`"approvals:decide"`: the token must hold it; who may see what is the selector's or service's to say), or
    None (anyone signed in). `Input` validates the body (a `StrictSerializer`: unknown fields are refused),
    `Output` shapes the answer; both are read by the OpenAPI schema (forge/api/schema.py).
    """

    action: str | None = None
    Input: type[serializers.Serializer] | None = None
    Output: type[serializers.Serializer] | None = None
    paged: bool = False  # a list operation: answers a cursor page of Output
    success_status: int = 200  # what `answer` and the schema give when the operation succeeds (201 for a creation)
    ordering: Sequence[str] = ("-id",)  # the page's order; the last field must be unique
    secret_fields: tuple[str, ...] = ()  # answer fields shown once (a token): never kept for an idempotent replay

    permission_classes = [IsAuthenticated]
    parser_classes = [StrictJSONParser]
    renderer_classes = [JSONRenderer]
    throttle_classes = [ApiRateThrottle]

    # -- what an operation calls -------------------------------------------------------------------

    def read(self, request: Request, *, partial: bool = False, context: dict | None = None) -> dict[str, Any]:
        """The body validated by `Input`: its validated data, or a 400 problem with `errors` per field."""
        assert self.Input is not None, f"{type(self).__name__} reads a body but declares no Input"
        found = self.Input(data=request.data, partial=partial, context={"request": request, **(context or {})})
        if not found.is_valid():
            raise validation_problem(found.errors)
        return found.validated_data

    def answer(self, instance: Any = None, *, status: int | None = None, headers: dict[str, str] | None = None,
               data: Any = None) -> Response:
        """`Output(instance).data` (or `data` as given) with `status` (default `success_status`)."""
        status = self.success_status if status is None else status
        if data is None and instance is not None:
            data = self.Output(instance, context={"request": self.request}).data
        return Response(data, status=status, headers=headers)

    def page(self, queryset: QuerySet, *, ordering: Sequence[str] | None = None) -> Response:
        """One cursor page of `queryset` as `{results, next, previous}`: `?cursor=` and `?limit=` (default 50,
        at most 200) from the request; the items through one `Output(items, many=True)`, whose fields are built
        once for the page rather than once per item (most of a page's time, measured by bench/api_bench.py)."""
        items, next_link, previous_link = CursorPagination(ordering or self.ordering).paginate(queryset,
                                                                                              self.request)
        results = self.Output(items, many=True, context={"request": self.request}).data
        return Response({"results": results, "next": next_link, "previous": previous_link})

    # -- the request's path ------------------------------------------------------------------------

    def initial(self, request: Request, *args, **kwargs) -> None:
        """DRF's, but rate limits are counted before permissions: a refused or anonymous client counts too."""
        self.format_kwarg = self.get_format_suffix(**kwargs)
        request.accepted_renderer, request.accepted_media_type = self.perform_content_negotiation(request)
        request.version, request.versioning_scheme = self.determine_version(request, *args, **kwargs)
        idempotency.keep_body(request)
        try:
            self.perform_authentication(request)
        finally:
            self.check_throttles(request)
        self.check_permissions(request)
        self.check_action(request)

    def check_action(self, request: Request) -> None:
        action = self.action
        if action is None:
            return
        if action in roles.ACTIONS:
            roles.require(request.user, action, f"Your groups do not allow {action}.")
        elif not roles.has_scope(request.user, action):
            raise roles.scope_missing(action)

    def dispatch(self, request, *args, **kwargs):
        """DRF's, with the handler behind the request's Idempotency-Key (forge/api/idempotency.py)."""
        self.args, self.kwargs = args, kwargs
        request = self.initialize_request(request, *args, **kwargs)
        self.request = request
        self.headers = self.default_response_headers
        claim = None
        try:
            self.initial(request, *args, **kwargs)
            handler = getattr(self, request.method.lower(), None)
            if handler is None or request.method.lower() not in self.http_method_names:
                handler = self.http_method_not_allowed
            else:
                claim = idempotency.claim(request)
            if claim is not None and claim.replay is not None:
                response = claim.replay
                claim = None
            else:
                response = handler(request, *args, **kwargs)
        except Exception as exc:
            try:
                response = self.handle_exception(exc)
            except Exception:
                if claim is not None:
                    claim.abandon()
                raise
        self.response = self.finalize_response(request, response, *args, **kwargs)
        if claim is not None and self.response.streaming:  # a stream cannot be kept to answer again
            claim.abandon()
        elif claim is not None:
            self.response.render()
            claim.store(self.response, self.secret_fields)
        return self.response

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        for name, value in rate_limit_headers(request).items():
            response[name] = value
        return response
