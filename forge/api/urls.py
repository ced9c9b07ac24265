from django.urls import path

from forge.api import callbacks

urlpatterns = [
    path("steps/complete", callbacks.StepCompleteApi.as_view(), name="step-complete"),
]
