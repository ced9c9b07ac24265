"""ASGI entry point: HTTP through Django, websockets through Channels (logged-in sessions, this site's
origins only)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge.settings")
django_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (Django must be set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from forge.console.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_app,
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
})
