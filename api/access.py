"""What every researcher endpoint shares: authentication (hashed tokens or the session), the
researcher and project-member permissions, pagination, filtering and the documented errors."""
from __future__ import annotations

from django.conf import settings
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.pagination import PageNumberPagination

from api.credentials import CountedTokenAuthentication
from projects.models import Project
from projects.permissions import IsProjectMember, IsResearcher, require_owner
from projects.selectors import get_project_for_user


MAX_ID = 2**63 - 1  # the largest primary key any supported database stores


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What was refused, and why.")
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), required=False,
        help_text="Messages per field, when the refusal is about fields.",
    )


class BadRequestSerializer(ErrorSerializer):
    """A malformed request: the services' ``{"detail", "errors"}``, or DRF's ``{"field": ["…"]}``."""

    detail = serializers.CharField(required=False, help_text="What was refused, and why.")


class ResearcherSchema(AutoSchema):
    """Documents the error answers every researcher endpoint may give, besides its success."""

    def _get_response_bodies(self, direction="response"):
        bodies = super()._get_response_bodies(direction)
        codes = ["401", "403", "404"]
        if self.method in ("POST", "PATCH", "DELETE"):
            codes.append("409")  # a transition or a write the current state does not allow (a non-draft edited)
        # A body, a filter or a declared query parameter can be refused as malformed.
        if (self.method in ("POST", "PUT", "PATCH") or self._is_list_view() or self.get_filter_backends()
                or self.get_override_parameters()):
            codes.insert(0, "400")
        for code in codes:
            serializer = BadRequestSerializer if code == "400" else ErrorSerializer
            bodies.setdefault(code, self._get_response_for_code(serializer, code, direction=direction))
        return bodies


class CountedTokenScheme(KnoxTokenScheme):
    """The schema's security scheme for knox tokens counted by the sign-in limiter."""

    target_class = CountedTokenAuthentication


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = settings.API_MAX_PAGE_SIZE


class ResearcherAPIMixin:
    """Token (``Authorization: Token …``) or session; researchers only; members read, owners write."""

    authentication_classes = [CountedTokenAuthentication, SessionAuthentication]
    permission_classes = [IsResearcher, IsProjectMember]
    pagination_class = Pagination
    filter_backends = [DjangoFilterBackend]
    schema = ResearcherSchema()


def owned_project(request, slug: str) -> Project:
    """The project named by ``slug`` for a write: 404 for a non-member, 403 for a collaborator."""
    project = get_project_for_user(user=request.user, slug=slug)
    require_owner(user=request.user, project=project)
    return project


class ProjectSlugField(serializers.SlugField):
    """A project named by its slug in a request body (checked against the caller's projects by the view)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 100)
        kwargs.setdefault("help_text", "The project's slug.")
        super().__init__(**kwargs)


WORKER_API_PREFIXES = ("/api/work/", "/api/providers/")


def researcher_endpoints(endpoints):
    """drf-spectacular preprocessing hook: the schema documents the researcher API, not the worker
    and provider endpoints that share the /api/ prefix."""
    return [endpoint for endpoint in endpoints if not endpoint[0].startswith(WORKER_API_PREFIXES)]
