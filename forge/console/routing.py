from django.urls import path

from forge.console.consumers import RunStream

websocket_urlpatterns = [path("ws/runs/<int:run_id>/", RunStream.as_asgi())]
