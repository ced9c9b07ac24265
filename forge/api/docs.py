"""`/api/v1/schema/`, the API's OpenAPI document (YAML, or JSON with `?format=json`), and `/api/v1/docs/`, the
same in Swagger UI from drf-spectacular-sidecar's static files (no CDN) under the console's Content-Security-Policy
(forge/api/templates/api/swagger_ui.html). Both are open to anyone: the document is docs/api/openapi.yaml."""

from __future__ import annotations

import threading

from csp.constants import SELF
from csp.decorators import csp_update
from django.conf import settings
from django.urls import get_urlconf
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.response import Response

from forge.api.throttles import ApiRateThrottle

_MADE: dict[str, dict] = {}  # the document by urlconf: it changes only with the code
_LOCK = threading.Lock()


class ApiSchemaView(SpectacularAPIView):
    """The document, made once per process (making it takes seconds), and rate limited as the API is."""

    throttle_classes = [ApiRateThrottle]

    def _get_schema_response(self, request):
        if request.GET.get("lang"):
            return super()._get_schema_response(request)
        urlconf = str(get_urlconf() or settings.ROOT_URLCONF)
        with _LOCK:
            if urlconf not in _MADE:
                _MADE[urlconf] = self.generator_class(urlconf=self.urlconf).get_schema(request=None, public=True)
        return Response(_MADE[urlconf], headers={
            "Content-Disposition": f'inline; filename="{self._get_filename(request, None)}"'})


class ApiDocsView(SpectacularSwaggerView):
    template_name = "api/swagger_ui.html"


api_schema = ApiSchemaView.as_view()
# Swagger UI's stylesheet draws its icons as data: SVG images; nothing else of the policy is loosened.
api_docs = csp_update({"img-src": [SELF, "data:"]})(ApiDocsView.as_view(url_name="api-schema"))
