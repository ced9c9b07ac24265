from django.urls import include, path

from forge.api import callbacks

urlpatterns = [
    path("steps/complete", callbacks.StepCompleteApi.as_view(), name="step-complete"),
    path("", include("forge.api.views.me")),
    path("", include("forge.api.views.tokens")),
    path("", include("forge.api.views.workflows")),
    path("", include("forge.api.views.runs")),
    path("", include("forge.api.views.events")),
    path("", include("forge.api.views.approvals")),
    path("", include("forge.api.views.schedules")),
    path("", include("forge.api.views.governance")),
    path("", include("forge.api.views.audit")),
]
