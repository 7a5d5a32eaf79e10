"""Projects (read) and releases (list, make, download) of the researcher API."""
from __future__ import annotations

import django_filters
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response
from rest_framework.reverse import reverse

from projects.models import Project, Release
from projects.selectors import projects_for_user, releases_for_user, role_of
from releases_app.files import SUMS_FILE
from releases_app.services import make_release, open_release_file, release_archive, release_folder
from stats import irr

from .access import ProjectSlugField, ResearcherAPIMixin, owned_project


class ProjectSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField(help_text="Your role: owner or collaborator.")

    class Meta:
        model = Project
        fields = ["slug", "name", "description", "created_at", "role"]

    def get_role(self, project) -> str:
        return role_of(user=self.context["request"].user, project=project)


class ProjectViewSet(ResearcherAPIMixin, viewsets.ReadOnlyModelViewSet):
    """The projects you are a member of."""

    serializer_class = ProjectSerializer
    lookup_field = "slug"
    lookup_value_regex = r"[-a-zA-Z0-9_]+"

    def get_queryset(self):
        return projects_for_user(self.request.user).order_by("name", "id")


class ReleaseFileSerializer(serializers.Serializer):
    path = serializers.CharField()
    sha256 = serializers.CharField()
    bytes = serializers.IntegerField()
    url = serializers.URLField(help_text="Download address (members only).")


class ReleaseSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    files = serializers.SerializerMethodField()
    checksums_url = serializers.SerializerMethodField(help_text="The release's SHA256SUMS.")

    class Meta:
        model = Release
        fields = ["id", "project", "name", "version", "counts", "created_at", "files", "checksums_url"]

    def _url(self, release, path: str) -> str:
        return reverse("api:release-download", kwargs={"pk": release.pk, "path": path},
                       request=self.context.get("request"))

    @extend_schema_field(ReleaseFileSerializer(many=True))
    def get_files(self, release) -> list:
        return [{"path": path, "sha256": entry["sha256"], "bytes": entry["bytes"], "url": self._url(release, path)}
                for path, entry in sorted(release.files.items())]

    def get_checksums_url(self, release) -> str:
        return self._url(release, SUMS_FILE)


class ReleaseCreateSerializer(serializers.Serializer):
    project = ProjectSlugField()
    name = serializers.CharField(max_length=100)
    version = serializers.CharField(max_length=64, default="1.0.0")
    threshold = serializers.FloatField(min_value=-1.0, max_value=1.0, default=irr.DEFAULT_THRESHOLD,
                                       help_text="IRR agreement threshold of kept items.")


class ReleaseFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="project__slug", help_text="Project slug.")

    class Meta:
        model = Release
        fields = ["project", "name", "version"]


class ReleaseViewSet(ResearcherAPIMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Immutable, versioned snapshots of a project (``releases_app.services.make_release``)."""

    serializer_class = ReleaseSerializer
    filterset_class = ReleaseFilter

    def get_queryset(self):
        return releases_for_user(self.request.user).select_related("project")

    @extend_schema(request=ReleaseCreateSerializer, responses={201: ReleaseSerializer})
    def create(self, request, *args, **kwargs):
        incoming = ReleaseCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        project = owned_project(request, data["project"])
        release = make_release(project=project, name=data["name"], version=data["version"],
                               out_dir=release_folder(project=project, name=data["name"], version=data["version"]),
                               created_by=request.user, threshold=data["threshold"])
        return Response(self.get_serializer(release).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={
        (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY),
        409: OpenApiResponse(description="The file on disk no longer matches the checksum recorded when the "
                                         "release was made; it is not served."),
    })
    def download(self, request, pk=None, path=""):
        """One file of the release, or its SHA256SUMS; only files the release lists are served, and
        only while they match the checksums recorded when the release was made (409 otherwise)."""
        release = self.get_object()
        handle = open_release_file(release=release, relative=path)
        return FileResponse(handle, as_attachment=True, filename=path.rsplit("/", 1)[-1])

    @extend_schema(responses={
        (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY),
        409: OpenApiResponse(description="A file on disk no longer matches the checksum recorded when the "
                                         "release was made; the archive is not served."),
    })
    def archive(self, request, pk=None):
        """The whole release as one zip file: every file it lists and its SHA256SUMS, under one folder
        NAME-VERSION, checked as the single files are."""
        release = self.get_object()
        return FileResponse(release_archive(release=release), as_attachment=True,
                            filename=f"{release.name}-{release.version}.zip", content_type="application/zip")
