"""Settings for the test suite: Forge's own, with only what tests must change."""

import os
import tempfile

os.environ.setdefault("FORGE_SECRET_KEY", "tests-only-secret-key-not-for-production-0123456789")
os.environ.setdefault("FORGE_DATA_DIR", os.path.join(tempfile.gettempdir(), f"forge-tests-{os.getpid()}"))

from forge.settings import *  # noqa: E402,F403

Q_CLUSTER = {**Q_CLUSTER, "sync": True}  # noqa: F405
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SECURE_SSL_REDIRECT = False
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
os.makedirs(STATIC_ROOT, exist_ok=True)  # noqa: F405 - whitenoise warns at every request when it is missing
