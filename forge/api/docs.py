"""`/api/v1/docs/`: the API's document in Swagger UI, from drf-spectacular-sidecar's static files (no CDN), under
the console's Content-Security-Policy (forge/api/templates/api/swagger_ui.html)."""

from __future__ import annotations

from csp.constants import SELF
from csp.decorators import csp_update
from drf_spectacular.views import SpectacularSwaggerView


class ApiDocsView(SpectacularSwaggerView):
    template_name = "api/swagger_ui.html"


# Swagger UI's stylesheet draws its icons as data: SVG images; nothing else of the policy is loosened.
api_docs = csp_update({"img-src": [SELF, "data:"]})(ApiDocsView.as_view(url_name="api-schema"))
