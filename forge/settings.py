"""Forge's settings. Everything comes from the environment; every variable is in docs/configuration.md.

Embedded default: SQLite in WAL mode, django-q2's ORM broker, the in-memory
channel layer. Production: DATABASE_URL (PostgreSQL) and REDIS_URL.
"""

from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from engine.executors.egress import allow_list as egress_allow_list
from engine.executors.sandbox import sandbox_from_environ
from forge.env import env_bool, env_float, env_int, env_list, env_seconds_list, env_secret, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("FORGE_DATA_DIR") or BASE_DIR / "var")
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("FORGE_DEBUG", False)
# bin/serve keeps a key in the data folder, so `forge` in another terminal finds the same one.
KEPT_SECRET_KEY = DATA_DIR / "secret_key"
SECRET_KEY = env_secret("FORGE_SECRET_KEY")
if not SECRET_KEY and KEPT_SECRET_KEY.is_file():
    SECRET_KEY = KEPT_SECRET_KEY.read_text().strip()
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(f"set FORGE_SECRET_KEY (or FORGE_SECRET_KEY_FILE), or start Forge once with "
                                   f"bin/serve, which keeps one in {KEPT_SECRET_KEY}")
    SECRET_KEY = "django-insecure-forge-debug-only"
ALLOWED_HOSTS = env_list("FORGE_ALLOWED_HOSTS", ("localhost", "127.0.0.1", "[::1]"))
CSRF_TRUSTED_ORIGINS = env_list("FORGE_CSRF_TRUSTED_ORIGINS")
CSRF_FAILURE_VIEW = "forge.console.views.pages.csrf_failure"

INSTALLED_APPS = [
    "daphne",
    "forge.admin_site.ForgeAdminConfig",  # django.contrib.admin, open to the Admins group
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # the schema page's Swagger UI, from static
    "django_filters",
    "forge.runtime",  # its qcluster command replaces django_q's (a clean stop), so it comes first
    "django_q",
    "template_partials",
    "axes",
    "forge.accounts",
    "forge.audit",
    "forge.workflows",
    "forge.governance",
    "forge.runs",
    "forge.schedules",
    "forge.api",
    "forge.console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",  # before WhiteNoise: static files too (the elkjs worker runs under it)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "forge.request_guard.ControlCharacterGuard",  # after CSRF, which refuses a post without its token first
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "forge.accounts.acting.ActingPersonMiddleware",  # who changes a person or group (forge/accounts/audit_trail.py)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a refused login into the lockout page
]

ROOT_URLCONF = "forge.urls"
ASGI_APPLICATION = "forge.asgi.application"
WSGI_APPLICATION = "forge.wsgi.application"

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [BASE_DIR / "templates"],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
        "forge.console.context.top_bar",
    ]},
}]

# -- database ------------------------------------------------------------------

DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("FORGE_DB_CONN_MAX_AGE", 60))}
    # The runtime's statements (forge/runs/store.py) are prepared after 5 uses: planning them anew took a
    # quarter of a step. Django's own cursors never prepare. Off for a pooler that cannot keep them
    # (PgBouncer in transaction mode before 1.21).
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = (
        5 if env_bool("FORGE_DB_PREPARED_STATEMENTS", True) else None)
else:
    # WAL lets readers run beside the one writer; IMMEDIATE takes the write lock
    # at BEGIN, so two writers queue on the busy timeout instead of failing with
    # "database is locked" when a read transaction tries to upgrade.
    # Connections are kept (as on PostgreSQL): the queue's poller would otherwise reopen one on every poll.
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": env_str("FORGE_SQLITE_PATH") or str(DATA_DIR / "forge.sqlite3"),
        "CONN_MAX_AGE": env_int("FORGE_DB_CONN_MAX_AGE", 60),
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": env_int("FORGE_SQLITE_BUSY_TIMEOUT_S", 30, minimum=1),
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON",
        },
        "TEST": {"NAME": str(DATA_DIR / "test-forge.sqlite3")},
    }}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
EMBEDDED = not DATABASE_URL

# -- queue and channels ----------------------------------------------------------

REDIS_URL = env_str("REDIS_URL")

# The longest a step may run; django-q2's task timeout and re-delivery window
# are derived from it so a running step is never handed to a second worker.
FORGE_STEP_TIMEOUT_MAX_S = env_int("FORGE_STEP_TIMEOUT_MAX_S", 3600, minimum=1)
FORGE_TASK_MARGIN_S = env_int("FORGE_TASK_MARGIN_S", 60, minimum=5)
_task_timeout = FORGE_STEP_TIMEOUT_MAX_S + FORGE_TASK_MARGIN_S

Q_CLUSTER = {
    "name": env_str("FORGE_QUEUE_NAME") or "forge",
    "workers": env_int("FORGE_WORKERS", 4, minimum=1),
    "timeout": _task_timeout,
    "retry": env_int("FORGE_TASK_RETRY_S", _task_timeout + FORGE_TASK_MARGIN_S, minimum=1),
    "max_attempts": 0,
    "ack_failures": True,
    "save_limit": -1,  # results live in Forge's own tables
    "catch_up": False,
    "poll": env_float("FORGE_ORM_POLL_S", 0.05, minimum=0.01),
    "bulk": 1,
    "guard_cycle": 0.5,
    "label": "Task queue",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
    Q_CLUSTER["broker_class"] = "forge.runtime.broker.TickingRedis"
    # channels_redis waits on a 5 s blocking pop; redis-py 8 reads with a 5 s socket timeout by default, which
    # fires first and tears every idle websocket down (channels_redis#422). Reads wait longer than the pop.
    # One pool per process, shared by all its sockets: at most FORGE_CHANNEL_REDIS_CONNECTIONS, and a command
    # waits up to 20 s for a free one rather than failing (forge/channel_layer.py). Keys are prefixed with the
    # queue's name, so deployments sharing a Redis do not wake each other's pages.
    CHANNEL_LAYERS = {"default": {"BACKEND": "forge.channel_layer.PooledRedisChannelLayer", "CONFIG": {
        "prefix": f"asgi-{Q_CLUSTER['name']}",
        "hosts": [{"address": REDIS_URL, "socket_timeout": 30, "socket_connect_timeout": 5, "timeout": 20,
                   "max_connections": env_int("FORGE_CHANNEL_REDIS_CONNECTIONS", 50, minimum=2)}]}}}
else:
    Q_CLUSTER["orm"] = "default"
    Q_CLUSTER["broker_class"] = "forge.runtime.broker.TickingORM"
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
Q_CLUSTER["sync"] = env_bool("FORGE_QUEUE_SYNC", False)

# -- the runtime -------------------------------------------------------------------

FORGE_PUBLIC_URL = (env_str("FORGE_PUBLIC_URL") or "http://127.0.0.1:8000").rstrip("/")
FORGE_PYTHON_CALLABLES = env_list("FORGE_PYTHON_CALLABLES", (
    "forge.runs.callables.noop", "forge.runs.callables.word_count", "forge.runs.callables.echo"))
FORGE_ALLOW_SELF_APPROVAL = env_bool("FORGE_ALLOW_SELF_APPROVAL", False)
# A run's arguments in all, as JSON: they are copied into its state, checkpoints and events.
FORGE_MAX_ARGS_BYTES = env_int("FORGE_MAX_ARGS_BYTES", 65_536, minimum=1)
FORGE_LEASE_S = env_int("FORGE_LEASE_S", 30, minimum=2)
FORGE_TICK_S = env_float("FORGE_TICK_S", 0.1, minimum=0.01)
FORGE_RECOVERY_S = env_float("FORGE_RECOVERY_S", 5, minimum=0.1)
FORGE_SCHEDULES_S = env_float("FORGE_SCHEDULES_S", 1, minimum=0.01)
# Live views read new events when woken and at least this often (the embedded default has no cross-process
# wake-up: the poll is what updates its pages).
FORGE_LIVE_POLL_S = env_float("FORGE_LIVE_POLL_S", 2.0 if REDIS_URL else 0.2, minimum=0.02)
FORGE_LIVE_REPLAY_MAX = env_int("FORGE_LIVE_REPLAY_MAX", 5000, minimum=1)
# How often a process checks that its live sockets' sessions still let them watch (forge/accounts/session_watch.py).
FORGE_LIVE_SESSION_CHECK_S = env_float("FORGE_LIVE_SESSION_CHECK_S", 1.0, minimum=0.05)
FORGE_ORM_BUSY_S = env_float("FORGE_ORM_BUSY_S", 1.0, minimum=0)
FORGE_ORM_BUSY_POLL_S = env_float("FORGE_ORM_BUSY_POLL_S", 0.005, minimum=0.001)
FORGE_GOVERNANCE_REFRESH_S = env_float("FORGE_GOVERNANCE_REFRESH_S", 1.0, minimum=0)
FORGE_MAX_RESTARTS = env_int("FORGE_MAX_RESTARTS", 3, minimum=0)
FORGE_RUNNER_CONCURRENCY = env_int("FORGE_RUNNER_CONCURRENCY", 8, minimum=1)
FORGE_WORKDIR = Path(env_str("FORGE_WORKDIR") or DATA_DIR / "work")
# A step's `artifacts` are copied here, each at most FORGE_ARTIFACT_MAX_BYTES, a run's at most ..._RUN_MAX_BYTES.
FORGE_ARTIFACTS_DIR = Path(env_str("FORGE_ARTIFACTS_DIR") or DATA_DIR / "artifacts")
FORGE_ARTIFACT_MAX_BYTES = env_int("FORGE_ARTIFACT_MAX_BYTES", 10 * 1024 * 1024, minimum=1)
FORGE_ARTIFACT_RUN_MAX_BYTES = env_int("FORGE_ARTIFACT_RUN_MAX_BYTES", 100 * 1024 * 1024, minimum=1)
# The longest a document's `timeout` may make a run last (spec 15: its own bound, not the step timeout's).
FORGE_RUN_TIMEOUT_MAX_S = env_int("FORGE_RUN_TIMEOUT_MAX_S", 7 * 24 * 3600, minimum=1)
# Gateways' health: each health_url probed every FORGE_GATEWAY_PROBE_S, bounded by ..._PROBE_TIMEOUT_S; a
# dispatch that cannot connect to any covering gateway is tried again after each of FORGE_GATEWAY_RETRY_S.
FORGE_GATEWAY_PROBE_S = env_float("FORGE_GATEWAY_PROBE_S", 30.0, minimum=0.05)
FORGE_GATEWAY_PROBE_TIMEOUT_S = env_float("FORGE_GATEWAY_PROBE_TIMEOUT_S", 5.0, minimum=0.05)
FORGE_GATEWAY_RETRY_S = env_seconds_list("FORGE_GATEWAY_RETRY_S", (1.0, 4.0, 16.0))
# Where shell steps run (FORGE_SHELL_SANDBOX, FORGE_SHELL_UIDS); each agent adds its network and limits.
# Shell agents whose steps may use the worker's network (`network: true` in their config): the operator's grant,
# since such a step reaches what the worker reaches; an Admin cannot give it in the admin.
FORGE_SHELL_NETWORK_AGENTS = frozenset(env_list("FORGE_SHELL_NETWORK_AGENTS"))
_shell = {"FORGE_SHELL_SANDBOX": env_str("FORGE_SHELL_SANDBOX"), "FORGE_SHELL_UIDS": env_str("FORGE_SHELL_UIDS")}
try:
    FORGE_SHELL_SANDBOX = sandbox_from_environ({name: value for name, value in _shell.items() if value})
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# host:port pairs the http and openai agents may reach although they are (or resolve to) loopback, private,
# link-local or other non-public addresses; everything public is reachable, everything else refused.
try:
    FORGE_EGRESS_ALLOW = egress_allow_list(env_list("FORGE_EGRESS_ALLOW"))
except ValueError as exc:
    raise ImproperlyConfigured(f"FORGE_EGRESS_ALLOW: {exc}") from None

# -- people, API, static -------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Logins are throttled (django-axes; the rules are in forge/accounts/throttle.py): this many failures of one
# account from one address within the cool-off lock that account from that address, this many from one address
# lock the address, each until the cool-off has passed since the failures that count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out client before any password is checked
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("FORGE_LOGIN_FAILURES_PER_ACCOUNT", 5, minimum=1)
FORGE_LOGIN_FAILURES_PER_ADDRESS = env_int("FORGE_LOGIN_FAILURES_PER_ADDRESS", 50, minimum=1)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("FORGE_LOGIN_COOLOFF_S", 900, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_HANDLER = "forge.accounts.throttle.LoginThrottle"
AXES_CLIENT_IP_CALLABLE = "forge.accounts.throttle.client_address"
AXES_USERNAME_CALLABLE = "forge.accounts.throttle.attempted_username"
AXES_LOCKOUT_CALLABLE = "forge.console.views.login.lockout_response"
AXES_RESET_ON_SUCCESS = False  # the handler forgets only the account's own failures from that address
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # a lockout ends when its page says
AXES_DISABLE_ACCESS_LOG = True  # successful logins are not Forge's to keep
AXES_ENABLE_ADMIN = False  # forge/accounts/admin.py shows failed logins; lifting goes through the audited service
AXES_VERBOSE = False  # no banner on every process start (it would reach the `forge` command's stderr)

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

# The API (/api/v1, docs/design/api.md): requests per client (a token, a person's session, else an address) in
# each fixed window; a JSON body's largest size (413 beyond) and deepest nesting (400 beyond).
FORGE_API_RATE_LIMIT = env_int("FORGE_API_RATE_LIMIT", 600, minimum=1)
FORGE_API_RATE_WINDOW_S = env_int("FORGE_API_RATE_WINDOW_S", 60, minimum=1)
FORGE_API_MAX_BODY_BYTES = env_int("FORGE_API_MAX_BODY_BYTES", 2 * 1_048_576, minimum=1024)
FORGE_API_MAX_JSON_DEPTH = env_int("FORGE_API_MAX_JSON_DEPTH", 32, minimum=2)
# The rate windows are the cache's only use: with Redis every process counts in one place, else each its own.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": f"cache-{Q_CLUSTER['name']}"}}

# Bearer first: its challenge makes DRF answer a missing sign-in 401 (WWW-Authenticate), not 403.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["forge.api.auth.BearerTokenAuthentication",
                                       "rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["forge.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "forge.api.pagination.CursorPagination",
    "DEFAULT_THROTTLE_CLASSES": [],  # ApiView's own (forge/api/throttles.py): gateways' callbacks are not limited
    "EXCEPTION_HANDLER": "forge.api.problems.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "forge.api.schema.ForgeAutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Forge API",
    "DESCRIPTION": "Start, watch and decide runs, and manage workflows, schedules and governance (docs/api.md).",
    "VERSION": "1",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "DEFAULT_GENERATOR_CLASS": "forge.api.schema.ForgeSchemaGenerator",  # sees each operation of a by_method path
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",  # served from static: no CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# -- production hardening (all on when DEBUG is off) ----------------------------

SECURE_SSL_REDIRECT = env_bool("FORGE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("FORGE_SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env_int("FORGE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
# Behind a proxy, its X-Forwarded-Proto is the scheme and its X-Forwarded-For the client's address (the login throttle).
FORGE_BEHIND_PROXY = env_bool("FORGE_BEHIND_PROXY")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if FORGE_BEHIND_PROXY else None

# The Content-Security-Policy of every response (django-csp): scripts, styles, fetches and workers from the
# console's own origin only; an inline <script> or <style> runs only with the response's nonce
# (`request.csp_nonce`, put in the header only when a page uses it). 'self' in connect-src also matches ws: and
# wss: on the page's own host and port (CSP Level 3, "Does url match expression in origin"): the live sockets.
CONTENT_SECURITY_POLICY = {"DIRECTIVES": {
    "default-src": [SELF],
    "script-src": [SELF, NONCE],
    "style-src": [SELF, NONCE],
    "connect-src": [SELF],
    "worker-src": [SELF],  # elkjs lays the graphs out in a Web Worker
    "object-src": [NONE],
    "base-uri": [NONE],
    "form-action": [SELF],
    "frame-ancestors": [NONE],
}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("FORGE_LOG_LEVEL") or "INFO"},
    "loggers": {"django-q": {"level": env_str("FORGE_QUEUE_LOG_LEVEL") or "WARNING"}},
}
