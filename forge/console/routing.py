from django.urls import path

from forge.console.consumers import PageStream, RunStream

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunStream.as_asgi()),
    path("ws/live/", PageStream.as_asgi()),
]
