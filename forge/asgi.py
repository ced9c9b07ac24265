"""ASGI entry point: HTTP through Django, websockets through Channels (from the console's own origins only:
forge/origins.py; with the session of their cookie, whose person the consumer reads after accepting)."""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge.settings")
django_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (Django must be set up first)
from channels.sessions import SessionMiddlewareStack  # noqa: E402

from forge.console.routing import websocket_urlpatterns  # noqa: E402
from forge.origins import OriginValidator  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_app,
    "websocket": OriginValidator(SessionMiddlewareStack(URLRouter(websocket_urlpatterns))),
})

# What start-up loaded (Django, the URL map, the engine, ruamel) lives as long as the process: frozen out of the
# garbage collector, a full collection no longer walks it (such collections set the editor's patch p95).
gc.freeze()
