from django.urls import include, path, re_path

from forge.api import callbacks
from forge.api.docs import api_docs, api_schema
from forge.api.problems import not_found

urlpatterns = [
    path("steps/complete", callbacks.StepCompleteApi.as_view(), name="step-complete"),
    path("schema/", api_schema, name="api-schema"),
    path("docs/", api_docs, name="api-docs"),
    path("", include("forge.api.views.auth")),
    path("", include("forge.api.views.me")),
    path("", include("forge.api.views.tokens")),
    path("", include("forge.api.views.workflows")),
    path("", include("forge.api.views.drafts")),
    path("", include("forge.api.views.runs")),
    path("", include("forge.api.views.events")),
    path("", include("forge.api.views.approvals")),
    path("", include("forge.api.views.schedules")),
    path("", include("forge.api.views.governance")),
    path("", include("forge.api.views.audit")),
    re_path(r"", not_found),  # last: any other /api/v1/ path is a 404 problem, not the console's page
]
