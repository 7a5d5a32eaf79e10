"""Request checks that apply to every endpoint, anonymous ones included.

``InputCheckMiddleware`` refuses, before any view runs, bodies larger than the configured bound
and query strings, form fields and JSON bodies with text that ``kernel.input_checks``
refuses (NUL, lone surrogates, control characters, JSON nested too deeply). Views and parsers
then only ever see clean input.

``RateLimitMiddleware`` counts requests to the views named in ``settings.RATE_LIMITS``, and to the
worker pages each crowd provider declares (``providers.registry.rate_limited_views``), per
client address and per worker (the logged-in user, the signed task token of a provider page, or
the user name tried on a login form, from that address) in the cache, and answers 429 beyond the limit.

``ContentSecurityPolicyMiddleware`` gives each request a fresh nonce and each response the
Content-Security-Policy header of ``djangokit.csp``.
"""
from __future__ import annotations

import hashlib

from api.credentials import sign_in_key
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.utils.html import format_html
from djangokit import csp
from djangokit.rate_limits import count_requests, counters_of, parse_rate
from kernel.input_checks import HostileInput, check_text, load_json

JSON_TYPES = ("application/json",)
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def refusal(request, message: str, status: int, headers: dict | None = None) -> HttpResponse:
    """JSON ``{"detail": message}`` for API clients, a small page for browsers."""
    wants_json = (
        request.path.startswith("/api/")
        or request.content_type in JSON_TYPES
        or "application/json" in request.headers.get("Accept", "")
    )
    if wants_json:
        response = JsonResponse({"detail": message}, status=status)
    else:
        response = HttpResponse(
            format_html('<!doctype html><meta charset="utf-8"><title>crowdbench</title><p>{}</p>', message),
            status=status,
        )
    for name, value in (headers or {}).items():
        response[name] = value
    return response


class InputCheckMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            self.check(request)
        except HostileInput as error:
            return refusal(request, error.message, error.status_code)
        return self.get_response(request)

    def check(self, request) -> None:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise HostileInput("The Content-Length header is not a number.") from None
        if length > settings.MAX_REQUEST_BODY_BYTES:
            error = HostileInput(
                f"The request body is larger than {settings.MAX_REQUEST_BODY_BYTES / 2**20:g} MB."
            )
            error.status_code = 413
            raise error
        for key, values in request.GET.lists():
            check_text(key, where="A query parameter name", multiline=False)
            for value in values:
                check_text(value, where=f"The query parameter {key!r}", multiline=False)
        if request.method in ("GET", "HEAD", "OPTIONS") or not length:
            return
        try:
            if request.content_type in JSON_TYPES or request.content_type.endswith("+json"):
                load_json(request.body, max_depth=settings.MAX_JSON_DEPTH)
            elif request.content_type in FORM_TYPES:
                self.check_form(request)
        except RequestDataTooBig:
            raise HostileInput(
                f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE / 2**20:g} MB "
                "(files excluded)."
            ) from None
        except TooManyFieldsSent:
            raise HostileInput(f"The form has more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} fields.") from None
        except TooManyFilesSent:
            raise HostileInput(f"The form has more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files.") from None
        except (MultiPartParserError, SuspiciousOperation) as error:
            raise HostileInput(f"The form could not be read: {error}") from None

    def check_form(self, request) -> None:
        for key, values in request.POST.lists():
            check_text(key, where="A form field name", multiline=False)
            for value in values:
                check_text(value, where=f"The form field {key[:60]!r}")
        for key, uploads in request.FILES.lists():
            check_text(key, where="A form field name", multiline=False)
            for upload in uploads:
                check_text(upload.name or "", where=f"The name of the file in {key[:60]!r}", multiline=False)


def worker_key(request) -> str | None:
    """Who is asking, as far as the request tells without a database query."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    token = request.headers.get("X-Task-Token")
    if token:
        # A provider page's token is bound to one worker and one assignment.
        return "token:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
    username = request.POST.get("username") if request.method == "POST" else None
    if username:
        return sign_in_key(request, username)
    return None


class RateLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        from providers.registry import rate_limited_views

        self.groups = {}
        for group, rule in settings.RATE_LIMITS.items():
            for view_name in rule["views"]:
                self.groups[view_name] = group
        for group, view_name in rate_limited_views():
            if group not in settings.RATE_LIMITS:
                raise ImproperlyConfigured(f"{view_name} is limited as {group!r}, which settings.RATE_LIMITS lacks; "
                                           f"known: {', '.join(settings.RATE_LIMITS)}")
            self.groups[view_name] = group
        # A rate that cannot be read stops the server at start, not each request.
        for group, rule in settings.RATE_LIMITS.items():
            for scope in ("per_address", "per_worker"):
                if rule.get(scope):
                    parse_rate(rule[scope])

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        group = self.groups.get(match.view_name) if match is not None else None
        if group is None:
            return None
        rule = settings.RATE_LIMITS[group]
        if request.method not in rule.get("methods", ("GET", "POST")):
            return None
        # Both counters in one round trip: a request refused by one still counts on the other.
        usages = count_requests(counters_of(request, group, worker_key(request)), increment=True)
        over = [usage for usage in usages or () if usage.over]
        if not over:
            return None
        retry_after = max(1, *(usage.seconds_left for usage in over))
        return refusal(
            request,
            f"Too many requests ({rule['label']}); please wait {retry_after} seconds and try again.",
            429,
            headers={"Retry-After": str(retry_after)},
        )


class ServiceErrorPageMiddleware:
    """Pages answer a service's refusal with its status and message, as the API's handler does.

    DRF views handle their own exceptions first (``api.errors``); the cockpit shows a
    refusal at the form that caused it, or on its own page with the project's navigation
    (``cockpit.access.refused``); this covers every other page, with a way back to where the
    person was.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from django.shortcuts import render

        from kernel.errors import ServiceError

        if not isinstance(exception, ServiceError):
            return None
        if request.path.startswith("/api/"):
            return refusal(request, exception.message, exception.status_code)
        from cockpit.access import back_url

        return render(request, "message.html", {"message": exception.message, "back_url": back_url(request, "")},
                      status=exception.status_code)


class ContentSecurityPolicyMiddleware:
    """The nonce is made before any view runs, so templates can use it; the header is set on every
    response from the views and the middleware below (refusals, error pages included)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.csp_nonce = csp.new_nonce()
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = csp.header_value(
                nonce=request.csp_nonce, replace=getattr(response, "csp_replace", None))
        return response
