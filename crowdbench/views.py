import logging
import sys

from django.core.cache import cache
from django.db import InterfaceError, OperationalError, connection
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from django.views.defaults import page_not_found, server_error as default_server_error

from .middleware import refusal

logger = logging.getLogger(__name__)


def home(request):
    """Landing page: where researchers and workers go next."""
    return render(request, "home.html")


def favicon(request):
    """The site's icon for browsers that ask for /favicon.ico (pages link the SVG themselves)."""
    return redirect(static("crowdbench/favicon.svg"), permanent=True)


def not_found(request, exception=None):
    """404 for an address no view matches: JSON under /api/ (as the API's other errors), else the page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)


# Seconds a client is asked to wait when the database does not answer (a restart takes a few).
DATABASE_RETRY_AFTER = 5


def server_error(request):
    """500 for a bug; 503 with ``Retry-After`` while the database does not answer.

    Django calls this for any exception a view or a middleware let through, so a database that is
    restarting is one answer here wherever the connection broke (the session, the user, the view).
    ``OperationalError`` also covers deadlocks and serialization failures: asking again is right there too.
    """
    error = sys.exc_info()[1]
    if isinstance(error, (OperationalError, InterfaceError)):
        return refusal(request, "The service is briefly unavailable; please try again in a few seconds.", 503,
                       headers={"Retry-After": str(DATABASE_RETRY_AFTER)})
    return default_server_error(request)


def _reachable(check) -> bool:
    try:
        check()
    except Exception:  # any failure means "unreachable"; the reason may name hosts or credentials
        logger.warning("health check %s failed", check.__name__, exc_info=False)
        return False
    return True


def _database():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def _cache():
    key = "health:probe"
    cache.set(key, "1", timeout=10)
    if cache.get(key) != "1":
        raise RuntimeError("the cache did not return what was stored")


@never_cache
@require_GET
def health(request):
    """For load balancers and monitors: 200 when the database and the cache answer, else 503. No
    login, no rate limit, nothing but the state of each dependency."""
    checks = {"database": _reachable(_database), "cache": _reachable(_cache)}
    healthy = all(checks.values())
    body = {"status": "ok" if healthy else "unavailable",
            **{name: "ok" if ok else "unavailable" for name, ok in checks.items()}}
    return JsonResponse(body, status=200 if healthy else 503)
