"""ASGI entry point: HTTP through Django, websockets through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge.settings")
django_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402  (Django must be set up first)

application = ProtocolTypeRouter({"http": django_app})
