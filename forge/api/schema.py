"""The OpenAPI document's reading of ApiView (drf-spectacular): `Input` is the request body, `Output` the answer
(a cursor page of it when the view is `paged`), every operation lists the problems it may answer, writes take an
`Idempotency-Key`, and each operation is named after its view (`RunStartApi` is `run_start`)."""

from __future__ import annotations

import re

from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.generators import EndpointEnumerator, SchemaGenerator
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import get_doc
from drf_spectacular.renderers import OpenApiYamlRenderer
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from drf_spectacular.validation import validate_schema
from rest_framework import serializers

from forge.api.base import ApiView
from forge.api.idempotency import HEADER, MAX_KEY, WRITES
from forge.api.pagination import DEFAULT_LIMIT, MAX_LIMIT
from forge.api.problems import PROBLEM_JSON

PROBLEMS_SAID = {
    400: "The request is malformed: a field, a parameter, the body or the Idempotency-Key.",
    401: "Not signed in, or the token is unknown, expired or revoked.",
    403: "The person's groups, or the token's scopes, do not allow it.",
    404: "No such object, or none the person may see.",
    409: "The object's state does not allow it now, or a request with this Idempotency-Key is still being handled.",
    413: "The body is too large.",
    415: "The body is not application/json.",
    422: "The values cannot be taken, or this Idempotency-Key was used for another request.",
    429: "Too many requests: Retry-After says when to come back.",
}
READ_PROBLEMS = (400, 401, 403, 404, 429)
WRITE_PROBLEMS = READ_PROBLEMS + (409, 413, 415, 422)


class ProblemSerializer(serializers.Serializer):
    """An RFC 9457 problem: `type` is stable per kind of refusal (docs/api.md lists them)."""

    type = serializers.URLField()
    title = serializers.CharField()
    status = serializers.IntegerField()
    detail = serializers.CharField()
    code = serializers.CharField(required=False, help_text="a finer reason, for programs")
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False,
                                   help_text="the sentences about each field of the request, by its path")

    class Meta:
        ref_name = "Problem"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class ForgeAutoSchema(AutoSchema):
    def _forge_view(self) -> bool:
        return isinstance(self.view, ApiView)

    # ApiView's `action` is a permission, not a viewset's action (which drf-spectacular reads by that name).
    def get_description(self) -> str:
        if not self._forge_view():
            return super().get_description()
        return get_doc(getattr(self.view, self.method.lower(), None)) or get_doc(type(self.view))

    def _is_list_view(self, serializer=None) -> bool:  # a page is one object: get_response_serializers says it
        return False if self._forge_view() else super()._is_list_view(serializer)

    def _is_create_operation(self) -> bool:
        return False if self._forge_view() else super()._is_create_operation()

    def get_operation_id(self) -> str:
        if not self._forge_view():
            return super().get_operation_id()
        return _snake(type(self.view).__name__.removesuffix("Api"))

    def get_serializer_name(self, serializer, direction) -> str:
        """A nested `RunStartApi.Input` is the component `RunStartInput` (every view's is called Input)."""
        qualname = type(serializer).__qualname__
        if "." not in qualname or "<locals>" in qualname:
            return super().get_serializer_name(serializer, direction)
        return "".join(part.removesuffix("Api") for part in qualname.split("."))

    def get_request_serializer(self):
        if self._forge_view() and self.method in WRITES:
            return self.view.Input
        return super().get_request_serializer()

    def get_response_serializers(self):
        if not self._forge_view():
            return super().get_response_serializers()
        view = self.view
        if view.Output is None:
            return None
        body = view.Output
        if view.paged:
            name = self.get_serializer_name(view.Output(), "response")
            body = inline_serializer(f"{name}Page", {
                "results": view.Output(many=True),
                "next": serializers.URLField(allow_null=True, help_text="the next page, null on the last"),
                "previous": serializers.URLField(allow_null=True, help_text="the previous page, null on the first"),
            })
        return {view.success_status: body}

    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        if not self._forge_view():
            return parameters
        if self.method in WRITES:
            parameters.append(OpenApiParameter(
                HEADER, OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
                description=f"1 to {MAX_KEY} printable ASCII characters: the same request sent again with the same "
                            f"key (within 24 hours) is answered as the first was, with Idempotent-Replayed: true."))
        if self.view.paged and self.method == "GET":
            parameters += [
                OpenApiParameter("cursor", OpenApiTypes.STR, OpenApiParameter.QUERY, required=False,
                                 description="The page to answer: from a `next` or `previous` link."),
                OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                                           "default": DEFAULT_LIMIT}, OpenApiParameter.QUERY, required=False,
                                 description=f"Items per page, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT})."),
            ]
        return parameters

    def _get_response_bodies(self, direction="response"):
        bodies = super()._get_response_bodies(direction)
        if not self._forge_view():
            return bodies
        for status in WRITE_PROBLEMS if self.method in WRITES else READ_PROBLEMS:
            if str(status) not in bodies:
                said = OpenApiResponse(ProblemSerializer, description=PROBLEMS_SAID[status])
                bodies[str(status)] = self._get_response_for_code(said, str(status), [PROBLEM_JSON], direction)
        return bodies


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer forge_pat_…` (forge/api/auth.py)."""

    target_class = "forge.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"
    optional = True

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A personal or service account token."}


def _operation(view):
    """The view function of an operation, seen through a `functools.partial` fixing URL arguments."""
    return getattr(view, "func", view)


class ForgeEndpointEnumerator(EndpointEnumerator):
    """Each operation of a `by_method` path (forge/api/routes.py) as an endpoint of its own."""

    def should_include_endpoint(self, path, callback):
        if hasattr(callback, "forge_methods"):
            return any(super(ForgeEndpointEnumerator, self).should_include_endpoint(path, _operation(view))
                       for view in callback.forge_methods.values())
        return super().should_include_endpoint(path, callback)

    def get_allowed_methods(self, callback):
        if hasattr(callback, "forge_methods"):
            return list(callback.forge_methods)
        return super().get_allowed_methods(callback)

    def get_api_endpoints(self, patterns=None, prefix=""):
        return [(path, regex, method, _operation(callback.forge_methods[method]))
                if hasattr(callback, "forge_methods") else (path, regex, method, callback)
                for path, regex, method, callback in super().get_api_endpoints(patterns, prefix)]


class ForgeSchemaGenerator(SchemaGenerator):
    endpoint_inspector_cls = ForgeEndpointEnumerator


def openapi_document() -> tuple[bytes, list[str]]:
    """The API's OpenAPI document as YAML (what docs/api/openapi.yaml holds), and the generator's warnings and
    errors, each a sentence."""
    GENERATOR_STATS.reset()
    with GENERATOR_STATS.silence():
        schema = ForgeSchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    said = [f"warning: {text}" for text in GENERATOR_STATS._warn_cache] + [
        f"error: {text}" for text in GENERATOR_STATS._error_cache]
    GENERATOR_STATS.reset()
    return OpenApiYamlRenderer().render(schema, renderer_context={}), said
