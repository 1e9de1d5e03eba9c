"""Settings, read from the environment (twelve-factor).

Two shapes of deployment share this file:
- the embedded default (no DATABASE_URL, no REDIS_URL): SQLite under var/, a file cache, a
  SQLite-file Celery broker, an in-process channel layer that workers reach through the database
  and database-backed rate limits, so `make run` needs no server;
- a server deployment: DATABASE_URL (PostgreSQL) and REDIS_URL (cache, rate limits, channel layer,
  Celery broker).

APP_MODE=production refuses to start with DEBUG on or with the development secret.
"""

from __future__ import annotations

import logging
import os
from datetime import date
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from config.openapi import SPECTACULAR_SETTINGS as SPECTACULAR_SETTINGS

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

env = environ.Env()

APP_MODE = env.str("APP_MODE", default="development")
if APP_MODE not in {"development", "production", "test"}:
    raise ImproperlyConfigured("APP_MODE must be development, production or test")
PRODUCTION = APP_MODE == "production"

DEV_SECRET_KEY = "dev-insecure-secret-key-do-not-use-in-production-0123456789abcdef"  # noqa: S105 (refused in production)
SECRET_KEY = env.str("SECRET_KEY", default=DEV_SECRET_KEY)
# Off unless asked for (DEBUG=1), in development too: Django's technical 404/400/500 pages show
# absolute paths, the URL patterns and (masked) settings to any client that reaches `make run`.
DEBUG = env.bool("DEBUG", default=False)

if PRODUCTION:
    if DEBUG:
        raise ImproperlyConfigured("APP_MODE=production refuses DEBUG=1")
    if SECRET_KEY == DEV_SECRET_KEY or len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
        raise ImproperlyConfigured("APP_MODE=production needs SECRET_KEY: 50+ characters, not the default")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[] if PRODUCTION else ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "apps.core.apps.AdminConfig",  # django.contrib.admin with a rate-limited sign-in
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "channels",
    "apps.platform",
    "apps.core",
    "apps.agents",
    "apps.chats",
    "apps.ai",
    "apps.kb",
    "apps.billing",
    "apps.support",
    "apps.webhooks",
    "apps.compat",
    "apps.widget",
    "apps.stats",
    "apps.console",
    "apps.channels",
    "apps.external",
    "apps.learning",
    "apps.canned",
    "apps.erasure",
    "apps.audit",
    "apps.privacy",
    "apps.routing",
    "apps.proactive",
    "apps.mentions",
    "apps.automation",
    "apps.macros",
    "apps.mcp",
    "apps.push",  # Web Push to operators' devices (after routing: its queue handler runs first)
    "django_otp",  # two-factor sign-in (apps.console.signin): TOTP and one-time recovery-code devices
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
]

MIDDLEWARE = [
    "apps.core.middleware.RequestMetricsMiddleware",
    "apps.core.middleware.RequestContextMiddleware",
    "apps.core.middleware.ProblemResponseMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "apps.core.middleware.BodySizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "apps.console.middleware.ConsoleLocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",  # request.user.is_verified(): the session passed a second factor
    "apps.audit.middleware.AdminActorMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "apps.console.middleware.ConsoleContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "config.urls"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

# --- database ---------------------------------------------------------------------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE write transactions serialise writers, so "insert that only one request can win"
    # and the database rate-limit budget stay atomic across the web, worker and beat processes.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"}
    )
else:
    # Under ASGI each request runs sync code on a fresh thread: persistent connections would pile up.
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # psycopg binds values on the server and prepares a statement once a connection has run its text
    # DB_PREPARE_THRESHOLD times (Django's `server_side_binding` and `prepare_threshold` options):
    # the ORM writes the same text for every run of a query, so PostgreSQL parses the queries of
    # every request once per connection instead of on each run. 0 binds on the client and prepares
    # nothing, for a pooler that cannot keep prepared statements. A prepared statement is still
    # planned for each run's values (plan_cache_mode): PostgreSQL's generic plan, which it would
    # switch to after five runs, estimates `chat_id = $1` as a chat of average size, and for a chat
    # of 50,000 messages it sorts them all for a page of 20.
    DB_PREPARE_THRESHOLD = env.int("DB_PREPARE_THRESHOLD", default=5)
    if DB_PREPARE_THRESHOLD > 0:
        options = DATABASES["default"].setdefault("OPTIONS", {})
        options.update({"server_side_binding": True, "prepare_threshold": DB_PREPARE_THRESHOLD})
        options["options"] = f"{options.get('options', '')} -c plan_cache_mode=force_custom_plan".strip()
    # A process-wide connection pool (Django's own `pool` option, psycopg-pool) for processes that
    # serve many short units of work at once: the web (scripts/web.sh sets DB_POOL_MAX_SIZE) and the
    # `ai` worker's threads (the Procfile). A request or a task takes an open connection and gives it
    # back when it ends or waits on a provider, instead of opening one each (a PostgreSQL backend
    # start). Prefork workers drop it (config.celery): Celery closes a prefork child's pool around
    # every task; their connections are kept by CELERY_DB_REUSE_MAX. With CONN_HEALTH_CHECKS Django has the
    # pool check a connection before handing it out (one empty round trip), so a server restart costs
    # no request.
    DB_POOL_MAX_SIZE = env.int("DB_POOL_MAX_SIZE", default=0)
    if DB_POOL_MAX_SIZE > 0:
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps them; Django refuses both
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": min(env.int("DB_POOL_MIN_SIZE", default=2), DB_POOL_MAX_SIZE),
            "max_size": DB_POOL_MAX_SIZE,
            # Waiting longer than this for a free connection is 503 service_unavailable.
            "timeout": env.float("DB_POOL_TIMEOUT", default=10.0),
            "max_idle": 300.0,
        }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Threads of a web process that run requests' synchronous work (the WSGI adapter's pool, config/asgi.py):
# each request runs all of it on one of them, the first to come free. Keep it at most DB_POOL_MAX_SIZE.
WEB_THREADS = env.int("WEB_THREADS", default=4)
if WEB_THREADS < 1:
    raise ImproperlyConfigured(f"WEB_THREADS must be at least 1, not {WEB_THREADS}")
# Requests of one widget that may wait on its AI provider at once, across web processes
# (apps.core.provider_waits); more are 429 provider_busy. Below WEB_THREADS, so that one widget's slow
# provider holds at most this many of a process's threads and leaves the rest to every other widget.
AI_REQUEST_PROVIDER_SLOTS = env.int("AI_REQUEST_PROVIDER_SLOTS", default=2)
if not 1 <= AI_REQUEST_PROVIDER_SLOTS < max(WEB_THREADS, 2):
    raise ImproperlyConfigured(
        f"AI_REQUEST_PROVIDER_SLOTS must be at least 1 and below WEB_THREADS ({WEB_THREADS}; 1 when WEB_THREADS "
        f"is 1), not {AI_REQUEST_PROVIDER_SLOTS}"
    )
# Requests of one web process that may wait on AI providers at once, whatever their widgets; more are
# 429 provider_busy. Below WEB_THREADS, so that slow providers of several widgets together still leave
# a thread to every other request of the process.
AI_REQUEST_PROVIDER_PROCESS_SLOTS = env.int("AI_REQUEST_PROVIDER_PROCESS_SLOTS", default=max(WEB_THREADS - 1, 1))
if not 1 <= AI_REQUEST_PROVIDER_PROCESS_SLOTS < max(WEB_THREADS, 2):
    raise ImproperlyConfigured(
        f"AI_REQUEST_PROVIDER_PROCESS_SLOTS must be at least 1 and below WEB_THREADS ({WEB_THREADS}; 1 when "
        f"WEB_THREADS is 1), not {AI_REQUEST_PROVIDER_PROCESS_SLOTS}"
    )
# The deadlines of provider calls a request waits on (the worker's own are longer): an embedding (a
# knowledge-base search or rule write, the retrieval of a signed assistant turn), and a signed
# assistant turn, speech or a model list as a whole.
AI_REQUEST_EMBED_DEADLINE_SECONDS = env.float("AI_REQUEST_EMBED_DEADLINE_SECONDS", default=5.0)
AI_REQUEST_PROVIDER_DEADLINE_SECONDS = env.float("AI_REQUEST_PROVIDER_DEADLINE_SECONDS", default=30.0)
USING_POSTGRES = DATABASES["default"]["ENGINE"].startswith("django.db.backends.postgresql")

# --- redis or the embedded default --------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")

# redis-py's client options for the long-lived processes' connections to REDIS_URL (the cache and the
# channel layer). A command that gets no answer within REDIS_SOCKET_TIMEOUT seconds fails (neither
# client sends a blocking read that could outlast it: the layer below waits for its messages with
# a timeout of its own); TCP keepalive and a PING before reusing a connection idle for 30 s find a
# connection a proxy or a Redis restart cut while it sat in the pool.
REDIS_SOCKET_TIMEOUT = env.float("REDIS_SOCKET_TIMEOUT", default=10.0)
REDIS_CONNECTION_OPTIONS = {
    "socket_connect_timeout": 5,
    "socket_timeout": REDIS_SOCKET_TIMEOUT,
    "socket_keepalive": True,
    "health_check_interval": 30,
}

if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {
                # One pool per process shared by every task (apps.platform.redis_pool; Django's backend
                # would build one per asyncio context: a connection per socket and per request).
                # Past REDIS_CACHE_CONNECTIONS a caller waits up to 5 s for a free connection.
                "pool_class": "apps.platform.redis_pool.SharedConnectionPool",
                "max_connections": env.int("REDIS_CACHE_CONNECTIONS", default=50),
                "timeout": 5,
                **REDIS_CONNECTION_OPTIONS,
            },
        },
    }
    # channels-redis's pub/sub layer. Each web process holds ONE subscription connection for all its
    # sockets (their channels and groups are subscriptions on it, a message is put on the socket's
    # in-process queue) plus one connection its publishes take in turn: an idle socket costs Redis
    # nothing, and a burst of sockets connecting or leaving queues its (un)subscribes on that
    # connection instead of taking a pooled connection each. channels-redis's list-based layer
    # (RedisChannelLayer) instead keeps a blocking read open per process and takes a pooled
    # connection per group add, discard and send, so a burst of sockets exhausts its pool.
    # Pub/sub delivers at most once and keeps nothing for a channel nobody listens on: a push is
    # best effort anyway (a visitor re-reads with `since`, a console re-reads its lists), and the
    # layer has no capacity, expiry or group expiry to tune.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": REDIS_URL, **REDIS_CONNECTION_OPTIONS}]},
        },
    }
    CELERY_BROKER_URL = REDIS_URL
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        },
    }
    # In-process layer: websocket fan-out reaches the sockets of the web process only, which is
    # the single web process of the embedded default. Workers relay their pushes to it through the
    # database (apps.platform.realtime).
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    # kombu's SQLAlchemy transport on a SQLite file of its own (apps.platform.broker.SQLiteTransport).
    # The URL is SQLAlchemy's, without kombu's `sqla+` prefix: a prefix names the transport itself
    # and would override the transport setting below.
    CELERY_BROKER_URL = f"sqlite:///{VAR_DIR / 'broker.sqlite3'}"
    CELERY_BROKER_TRANSPORT = "apps.platform.broker:SQLiteTransport"
    # create_engine options: wait for the file's write lock rather than fail a publish.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"connect_args": {"timeout": 30}}

# The web process reads the frames workers relayed (in-process layer only; apps.platform.realtime).
REALTIME_RELAY = env.bool("REALTIME_RELAY", default=True)

# --- celery -------------------------------------------------------------------------------------
# The longest countdown we schedule is a webhook retry (60 s) or the outbox re-drive; the broker's
# visibility timeout must exceed it, or Redis would hand a waiting task to a second worker.
CELERY_TASK_MAX_COUNTDOWN = 3600
if REDIS_URL:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_MAX_COUNTDOWN * 2}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery closes the database connection around every task unless this is set: the Procfile's worker
# lines (`worker`, prefork, and `ai`, a thread pool) set it so each pool process or thread keeps its
# connection across tasks (a connection per task costs a PostgreSQL backend start per
# visitor message or webhook hand-off); config.celery checks a kept connection at each task's start.
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=0) or None
# Long work a tenant starts (a crawl slice, a document's ingestion, translations, tuning, a wish's
# proposal) and the nightly purge of the webhook delivery log run on the `bulk` queue, which the
# Procfile's `bulk` worker consumes: a slow crawled site, a large upload or a long purge never holds
# the `worker` slots that send webhooks and fan events out. The AI operator's replies pick the `ai`
# queue when they are sent (apps.ai.runtime.QUEUE).
BULK_QUEUE = "bulk"
# Bulk threads one widget may hold at once (apps.core.bulk): the Procfile's `bulk` worker runs 2.
BULK_WIDGET_SLOTS = env.int("BULK_WIDGET_SLOTS", default=1)
# AI tasks (answers, hand-over summaries) of one widget that may wait on its provider at once, across
# `ai` worker processes (apps.ai.runtime.turns): the Procfile's `ai` worker runs 64 threads, so one
# widget's slow model server holds at most this many and leaves the rest to every other widget. A task
# over the cap goes back to the queue for a few seconds, holding no thread meanwhile.
AI_WIDGET_SLOTS = env.int("AI_WIDGET_SLOTS", default=24)
if AI_WIDGET_SLOTS < 1:
    raise ImproperlyConfigured(f"AI_WIDGET_SLOTS must be at least 1, not {AI_WIDGET_SLOTS}")
CELERY_TASK_ROUTES = {
    name: {"queue": BULK_QUEUE}
    for name in (
        "apps.kb.tasks.run_crawl",
        "apps.kb.tasks.ingest_document",
        "apps.ai.tasks.translate_widget_texts",
        "apps.learning.tasks.run_tuning_cycle",
        "apps.learning.tasks.propose_wish",
        "apps.webhooks.tasks.purge_delivery_log",
    )
}

# --- metrics (GET /metrics) -------------------------------------------------------------------------
# Token unset: loopback callers only, set: `Authorization: Bearer` it. Port: a worker's own /metrics, 0: none.
METRICS_TOKEN, METRICS_PORT = env.str("METRICS_TOKEN", default=""), env.int("METRICS_PORT", default=0)
# prometheus-client's multiprocess mode: every web and worker process of a host writes its counters
# into files of this folder and a scrape sums them. The library reads the variable when it is first
# imported, so it is set here, before any app module imports it; `manage.py reset_metrics` (run by
# scripts/run.sh before the processes start) empties the folder, as the library asks.
PROMETHEUS_MULTIPROC_DIR = Path(env.str("PROMETHEUS_MULTIPROC_DIR", default=str(VAR_DIR / "metrics")))
PROMETHEUS_MULTIPROC_DIR.mkdir(parents=True, exist_ok=True)
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(PROMETHEUS_MULTIPROC_DIR)

# --- i18n / time --------------------------------------------------------------------------------
LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
LOCALE_PATHS = [BASE_DIR / "locale"]
# The operator console speaks the widget's seven languages (apps.widget.settings_schema.LANGUAGES; a
# test keeps the two lists equal), each named in itself for the console's language switcher. Only the
# console is translated (apps.console.middleware): the API and its errors stay English.
LANGUAGES = [
    ("ru", "Русский"),
    ("en", "English"),
    ("el", "Ελληνικά"),
    ("de", "Deutsch"),
    ("es", "Español"),
    ("ar", "العربية"),
    ("zh", "中文"),
]
# The operator's choice in the console's switcher: a year, on the console's paths only.
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_PATH = "/console/"
LANGUAGE_COOKIE_SAMESITE = "Lax"
LANGUAGE_COOKIE_HTTPONLY = True
# Statistics windows, buckets and from/to parsing (product decision).
BUSINESS_TIME_ZONE = "Europe/Moscow"

# --- static and media (django-storages) --------------------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(VAR_DIR / "media")))
STORAGE_BACKEND = env.str("STORAGE_BACKEND", default="django.core.files.storage.FileSystemStorage")
STORAGE_OPTIONS = env.json("STORAGE_OPTIONS", default={})
STORAGES = {
    "default": {"BACKEND": STORAGE_BACKEND, "OPTIONS": STORAGE_OPTIONS},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not PRODUCTION
# The widget API's TypeScript declarations, readable in a browser (".ts" alone would be video/mp2t).
WHITENOISE_MIMETYPES = {"chat-widget.d.ts": "text/plain; charset=utf-8"}

# --- API ---------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["apps.core.auth.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["apps.core.auth.permissions.ScopePermission"],
    "DEFAULT_THROTTLE_CLASSES": ["apps.core.api.throttling.TokenRateThrottle"],
    "DEFAULT_RENDERER_CLASSES": ["apps.core.api.renderers.APIJSONRenderer"],
    "DEFAULT_METADATA_CLASS": None,
    "DEFAULT_PARSER_CLASSES": ["apps.core.api.parsers.StrictJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "apps.core.api.pagination.KeysetPagination",
    "DEFAULT_SCHEMA_CLASS": "apps.core.api.schema.ScopedAutoSchema",
    "EXCEPTION_HANDLER": "apps.core.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_VERSIONING_CLASS": None,
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

# Bodies larger than this are refused with 413 before parsing (file uploads set their own cap).
API_MAX_BODY_BYTES = env.int("API_MAX_BODY_BYTES", default=1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
API_FILE_UPLOAD_MAX_BYTES = 10 * 1024 * 1024 + 64 * 1024  # 10 MB file plus multipart framing
# The largest body any route accepts: larger ones are refused while they are read, before Django
# (apps.core.asgi_limits, config/asgi.py); the per-route limits above apply after it.
REQUEST_MAX_BODY_BYTES = max(API_MAX_BODY_BYTES, API_FILE_UPLOAD_MAX_BYTES)

API_RATE_LIMIT_PER_MINUTE = env.int("API_RATE_LIMIT_PER_MINUTE", default=600)
IDEMPOTENCY_KEY_TTL_SECONDS = 24 * 3600
TOKEN_LAST_USED_RESOLUTION_SECONDS = 60

VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR = env.int("VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR", default=30)
VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE = env.int("VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE", default=60)
# The per-widget visitor budgets (sessions 600 an hour, messages 600 a minute, ...: every address of
# one widget together) times this, for a site with more visitors at once; 0 turns them off.
VISITOR_WIDGET_BUDGET_SCALE = env.int("VISITOR_WIDGET_BUDGET_SCALE", default=1)
# Compat routes (no token, a secret in the path): requests per client address per minute (over it:
# 503 with Retry-After, which the legacy senders retry) and unknown path secrets per address per hour
# (spent: 429 for every compat request of that address). 0 turns a limit off.
COMPAT_REQUESTS_PER_ADDRESS_PER_MINUTE = env.int("COMPAT_REQUESTS_PER_ADDRESS_PER_MINUTE", default=600)
COMPAT_UNKNOWN_SECRETS_PER_ADDRESS_PER_HOUR = env.int("COMPAT_UNKNOWN_SECRETS_PER_ADDRESS_PER_HOUR", default=30)
# Messenger hook calls per connection in a sliding minute (over it: 429 with Retry-After before the
# body is read). 0 turns it off.
MESSENGER_HOOK_CALLS_PER_MINUTE = env.int("MESSENGER_HOOK_CALLS_PER_MINUTE", default=1200)
# Visitor websockets one client address holds open at once, across processes (0: no cap). One
# session holds at most 10 (product decision, apps.chats.visitor.consumers).
VISITOR_SOCKETS_PER_ADDRESS = env.int("VISITOR_SOCKETS_PER_ADDRESS", default=100)
# A visitor session unused for this many days is refused (401 invalid_visitor_session: the embed
# script starts a new one) and purged by the beat job chats.purge_visitor_sessions.
VISITOR_SESSION_IDLE_DAYS = env.int("VISITOR_SESSION_IDLE_DAYS", default=30)
# How many reverse proxies we own in front of the app: the client address is then read that many
# hops from the right of X-Forwarded-For (0: REMOTE_ADDR, and X-Forwarded-For is ignored).
TRUSTED_PROXY_HOPS = env.int("TRUSTED_PROXY_HOPS", default=0)

OUTBOUND_ALLOW_LOOPBACK = env.bool("OUTBOUND_ALLOW_LOOPBACK", default=False)
# Whole-call deadline of every outbound call that names none (fetch-by-URL, ...); webhook attempts
# use the same figure.
OUTBOUND_DEADLINE_SECONDS = env.float("OUTBOUND_DEADLINE_SECONDS", default=15.0)
if OUTBOUND_ALLOW_LOOPBACK:
    logging.getLogger("apps.platform.outbound").warning(
        "OUTBOUND_ALLOW_LOOPBACK=1: outbound calls may reach 127.0.0.0/8 and ::1"
    )
# The owner's own model servers (Ollama, vLLM, ... on a private network): host names and address
# ranges, each on one port (`10.0.0.7:11434`) or every port, AI credentials, and nothing else, may
# reach; `http://` only there; never loopback or a metadata address (apps.platform.outbound.policy).
AI_PRIVATE_HOSTS = env.list("AI_PRIVATE_HOSTS", default=[])
if AI_PRIVATE_HOSTS:
    logging.getLogger("apps.platform.outbound").warning(
        "AI_PRIVATE_HOSTS=%s: AI credentials (and nothing else) may reach these hosts, over http:// too",
        ",".join(AI_PRIVATE_HOSTS),
    )

# --- single sign-on (OpenID Connect, apps.console.sso): offered when OIDC_ISSUER and OIDC_CLIENT_ID
# are set; endpoints from the issuer's discovery document; redirect URI /console/sso/callback/.
OIDC_ISSUER = env.str("OIDC_ISSUER", default="")
OIDC_CLIENT_ID = env.str("OIDC_CLIENT_ID", default="")
OIDC_CLIENT_SECRET = env.str("OIDC_CLIENT_SECRET", default="")
OIDC_PROVIDER_NAME = env.str("OIDC_PROVIDER_NAME", default="")
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", "apps.console.sso.ConsoleOIDCBackend"]

# --- Web Push (apps.push): the VAPID key pair (`manage.py generate_vapid_keys`) and the contact the
# push services may write to. Without both keys the console offers no push notifications.
VAPID_PRIVATE_KEY = env.str("VAPID_PRIVATE_KEY", default="")
VAPID_PUBLIC_KEY = env.str("VAPID_PUBLIC_KEY", default="")
VAPID_SUBJECT = env.str("VAPID_SUBJECT", default="mailto:admin@localhost")
if not VAPID_SUBJECT.startswith(("mailto:", "https://")):
    raise ImproperlyConfigured("VAPID_SUBJECT must be a mailto: or https:// URL")
# One task per device push, on the `bulk` worker: a slow push service never holds the `worker`
# slots that serve chats, webhooks and events.
PUSH_QUEUE = env.str("PUSH_QUEUE", default=BULK_QUEUE)

# Webhook event types enabled platform-wide (`Live`); the others are `Wired` until switched on here
# or per type in Django admin (EventSwitch).
WEBHOOK_LIVE_EVENTS = env.list(
    "WEBHOOK_LIVE_EVENTS",
    default=[
        "message.created",
        "contact.erased",
        "chat.assigned",
        "sla.breached",
        "contact.merged",
        "chat.labels_changed",
    ],
)
WEBHOOK_SECRET_KEYS = env.list("WEBHOOK_SECRET_KEYS", default=[])  # Fernet, newest first; empty: from SECRET_KEY
# Settled deliveries unchanged this many days go nightly, with unreferenced outbox events (purge_delivery_log).
WEBHOOK_DELIVERY_RETENTION_DAYS = env.int("WEBHOOK_DELIVERY_RETENTION_DAYS", default=30)
if WEBHOOK_DELIVERY_RETENTION_DAYS < 1:
    raise ImproperlyConfigured(
        f"WEBHOOK_DELIVERY_RETENTION_DAYS must be at least 1, not {WEBHOOK_DELIVERY_RETENTION_DAYS}"
    )
WEBHOOK_CONCURRENCY = env.int("WEBHOOK_CONCURRENCY", default=64)  # attempts in flight per engine run
if not 2 <= WEBHOOK_CONCURRENCY <= 100:
    raise ImproperlyConfigured(f"WEBHOOK_CONCURRENCY must be from 2 to 100, not {WEBHOOK_CONCURRENCY}")
# After an external operator's secret rotation the previous secret keeps signing this long.
EXTERNAL_OPERATOR_SECRET_OVERLAP_SECONDS = env.int("EXTERNAL_OPERATOR_SECRET_OVERLAP_SECONDS", default=3600)

# Signed application-assistant calls (apps.core.signed): the deprecated v1 signature, which covers
# neither method nor path, is accepted before this ISO date (UTC, exclusive); empty refuses it.
SIGNED_V1_ACCEPTED_UNTIL = env.str("SIGNED_V1_ACCEPTED_UNTIL", default="2027-06-01")
if SIGNED_V1_ACCEPTED_UNTIL:
    date.fromisoformat(SIGNED_V1_ACCEPTED_UNTIL)  # a malformed date fails at start, not per call

# --- widget -------------------------------------------------------------------------------------------
# Widgets created before this moment get the legacy implicit defaults (ISO 8601; empty: built-in).
WIDGET_SETTINGS_LEGACY_CUTOFF = env.str("WIDGET_SETTINGS_LEGACY_CUTOFF", default="") or None
# Origin of the embed script URL (a CDN or the public host); empty: the host the API was called on.
WIDGET_EMBED_ORIGIN = env.str("WIDGET_EMBED_ORIGIN", default="")

# --- e-mail (invitations) -------------------------------------------------------------------------
# EMAIL_URL like smtp+tls://user:pass@host:587; development prints mails (invitation links) to stdout.
EMAIL_CONFIG = env.email_url("EMAIL_URL", default="smtp://localhost:25" if PRODUCTION else "consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="no-reply@localhost")
# Absolute base of links in e-mails (invitations); empty: the request's own host.
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="")
# Messenger provider API hosts (a test points one at a loopback fake of the provider's wire format).
PROVIDER_API_BASE_TG = env.str("PROVIDER_API_BASE_TG", default="https://api.telegram.org")
# Long-poll mode for a deployment with no public address: PUT/verify delete the webhook and check the
# bot's identity; beat polls getUpdates every TELEGRAM_POLL_SECONDS.
TELEGRAM_LONG_POLL = env.bool("TELEGRAM_LONG_POLL", default=False)
TELEGRAM_POLL_SECONDS = env.int("TELEGRAM_POLL_SECONDS", default=2)
PROVIDER_API_BASE_VK = env.str("PROVIDER_API_BASE_VK", default="https://api.vk.com")
PROVIDER_API_BASE_VB = env.str("PROVIDER_API_BASE_VB", default="https://chatapi.viber.com")
PROVIDER_API_BASE_FB = env.str("PROVIDER_API_BASE_FB", default="https://graph.facebook.com")
PROVIDER_API_BASE_WA = env.str("PROVIDER_API_BASE_WA", default="https://graph.facebook.com")
PROVIDER_API_BASE_OK = env.str("PROVIDER_API_BASE_OK", default="https://api.ok.ru")
PROVIDER_API_BASE_MX = env.str("PROVIDER_API_BASE_MX", default="https://botapi.max.ru")
PROVIDER_API_BASE_CIAN = env.str("PROVIDER_API_BASE_CIAN", default="https://public-api.cian.ru")
PROVIDER_API_BASE_ALI = env.str("PROVIDER_API_BASE_ALI", default="https://api-sg.aliexpress.com")
# Meta signs Messenger and WhatsApp callbacks with the delivering app's secret (X-Hub-Signature-256);
# unset, every callback of that provider is refused.
PROVIDER_APP_SECRET_FB = env.str("PROVIDER_APP_SECRET_FB", default="")
PROVIDER_APP_SECRET_WA = env.str("PROVIDER_APP_SECRET_WA", default="")
# The verify token the Meta app's dashboard sends when it checks a callback URL (GET hub.challenge).
PROVIDER_VERIFY_TOKEN_FB = env.str("PROVIDER_VERIFY_TOKEN_FB", default="")
PROVIDER_VERIFY_TOKEN_WA = env.str("PROVIDER_VERIFY_TOKEN_WA", default="")

# --- security ------------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Origins the console may show images from besides its own (apps.console.middleware), such as the
# object storage's host when STORAGE_BACKEND serves chat files from there.
CONSOLE_CSP_IMG_SOURCES = env.list("CONSOLE_CSP_IMG_SOURCES", default=[])
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    # Health checks and Prometheus reach each host's web process directly, over plain HTTP on the
    # private network (docs/operating/metrics.md); /metrics keeps its own token or loopback rule.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    LANGUAGE_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- logging ---------------------------------------------------------------------------------------
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_context": {"()": "apps.core.logging.RequestContextFilter"}},
    "formatters": {"json": {"()": "apps.core.logging.JSONFormatter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "json", "filters": ["request_context"]},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        "django.server": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        "uvicorn.access": {"handlers": [], "level": "CRITICAL", "propagate": False},
        # uvicorn's own lines (websocket handshakes name the path and query string) go through the
        # JSON handler, which scrubs credentials, instead of uvicorn's plain handler.
        "uvicorn": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # Lines per unit of routine work, shown only at DEBUG: Celery's per task (received, succeeded,
        # beat sending a due task; an idle stack runs a dozen periodic jobs) and the LLM SDKs' HTTP
        # libraries' per request ("HTTP Request: POST ... 200 OK", one for every answer, embedding and
        # credential check). Failures are logged at ERROR all the same.
        **{
            name: {"level": "DEBUG" if LOG_LEVEL == "DEBUG" else "WARNING"}
            for name in ("celery.worker.strategy", "celery.app.trace", "celery.beat", "httpx", "httpx2")
        },
    },
}
