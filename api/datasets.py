"""Data of a project in the researcher API: families, instances, images, review sets and model
outputs (list, and upload of a leaderboard ``predictions.csv``)."""
from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from datasets_app.licenses import normalise_license
from datasets_app.uploads import import_predictions_upload
from datasets_app.models import Image, Instance, InstructionFamily, Language, ModelOutput, Review, ReviewSet
from datasets_app.selectors import (
    families_for_user,
    images_for_user,
    instances_for_user,
    model_outputs_for_user,
    review_sets_for_user,
)
from projects.permissions import IsResearcher

from .access import MAX_ID, ProjectSlugField, ResearcherAPIMixin, owned_project


class FamilySerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = InstructionFamily
        fields = ["id", "project", "name", "description", "is_multi_image", "origin", "source_dataset",
                  "citation", "seed_instruction", "seed_response", "created_at"]


class FamilyFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="project__slug", help_text="Project slug.")

    class Meta:
        model = InstructionFamily
        fields = ["project", "is_multi_image"]


class FamilyViewSet(ResearcherAPIMixin, viewsets.ReadOnlyModelViewSet):
    """Instruction families of your projects."""

    serializer_class = FamilySerializer
    filterset_class = FamilyFilter

    def get_queryset(self):
        return families_for_user(self.request.user).select_related("project").order_by("name", "id")


class InstanceSerializer(serializers.ModelSerializer):
    family_name = serializers.CharField(source="family.name", read_only=True)
    images = serializers.SerializerMethodField(help_text="Image ids in their order.")

    class Meta:
        model = Instance
        fields = ["id", "family", "family_name", "instruction", "images", "language", "status",
                  "discard_reason", "source", "created_at", "updated_at"]

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_images(self, instance) -> list[int]:
        return [link.image_id for link in instance.image_links.all()]


class InstanceFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="family__project__slug", help_text="Project slug.")
    family = django_filters.NumberFilter(field_name="family_id", min_value=1, max_value=MAX_ID, help_text="Family id.")
    family_name = django_filters.CharFilter(field_name="family__name", help_text="Family name.")

    class Meta:
        model = Instance
        fields = ["project", "family", "family_name", "status", "language"]


class InstanceViewSet(ResearcherAPIMixin, viewsets.ReadOnlyModelViewSet):
    """Instances of your projects; filter by family and pipeline status."""

    serializer_class = InstanceSerializer
    filterset_class = InstanceFilter

    def get_queryset(self):
        return (instances_for_user(self.request.user).select_related("family__project")
                .prefetch_related("image_links").order_by("id"))


class ImageSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    url = serializers.SerializerMethodField(help_text="Where the image is published (our copy for stored files).")

    class Meta:
        model = Image
        fields = ["id", "project", "url", "sha256", "size_bytes", "width", "height", "license", "creator", "source_url",
                  "category", "created_at"]

    def get_url(self, image) -> str:
        if image.url:
            return image.url
        request = self.context.get("request")
        return request.build_absolute_uri(image.file.url) if request else image.file.url


class ImageFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="project__slug", help_text="Project slug.")
    license = django_filters.CharFilter(
        method="with_license", help_text="License identifier (usual spellings such as 'CC BY 4.0' accepted; "
                                         "an unknown license is a 400 naming the accepted ones).")

    class Meta:
        model = Image
        fields = ["project", "license", "category"]

    def with_license(self, queryset, name, value):
        return queryset.filter(license=normalise_license(value))


class ImageViewSet(ResearcherAPIMixin, viewsets.ReadOnlyModelViewSet):
    """Images of your projects (shown by their instances, families and review sets)."""

    serializer_class = ImageSerializer
    filterset_class = ImageFilter
    permission_classes = [IsResearcher]  # read-only

    def get_queryset(self):
        return images_for_user(self.request.user).select_related("project").order_by("id")


class ReviewSerializer(serializers.ModelSerializer):
    class Meta:
        model = Review
        fields = ["id", "prompt_rank", "text"]


class ReviewSetSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    reviews = ReviewSerializer(many=True, read_only=True)

    class Meta:
        model = ReviewSet
        fields = ["id", "project", "external_id", "image", "category", "language", "source", "reviews",
                  "created_at"]


class ReviewSetFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="project__slug", help_text="Project slug.")
    language = django_filters.ChoiceFilter(choices=Language.choices)

    class Meta:
        model = ReviewSet
        fields = ["project", "language", "category"]


class ReviewSetViewSet(ResearcherAPIMixin, viewsets.ReadOnlyModelViewSet):
    """IRR review sets of your projects; filter by language."""

    serializer_class = ReviewSetSerializer
    filterset_class = ReviewSetFilter

    def get_queryset(self):
        return review_sets_for_user(self.request.user).select_related("project").prefetch_related("reviews").order_by("id")


class ModelOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = ModelOutput
        fields = ["id", "instance", "model_name", "text", "source", "created_at"]


class ModelOutputFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="instance__family__project__slug", help_text="Project slug.")
    model = django_filters.CharFilter(field_name="model_name")

    class Meta:
        model = ModelOutput
        fields = ["project", "model", "instance", "source"]


class PredictionsUploadSerializer(serializers.Serializer):
    project = ProjectSlugField()
    file = serializers.FileField(help_text="predictions.csv: instruction, instruction_category, image or images, "
                                           "and one '<model name> prediction' column per model.")


class ImportCountsSerializer(serializers.Serializer):
    created = serializers.IntegerField(required=False)
    updated = serializers.IntegerField(required=False)
    unchanged = serializers.IntegerField(required=False)
    empty = serializers.IntegerField(required=False)


class UnmatchedRowSerializer(serializers.Serializer):
    row_number = serializers.IntegerField()
    reason = serializers.CharField()


class PredictionsReportSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="The uploaded file's name.")
    rows = serializers.IntegerField()
    matched = serializers.IntegerField()
    unmatched = UnmatchedRowSerializer(many=True)
    per_model = serializers.DictField(child=ImportCountsSerializer())


class ModelOutputViewSet(ResearcherAPIMixin, viewsets.ReadOnlyModelViewSet):
    """Candidate models' outputs on your projects' instances."""

    serializer_class = ModelOutputSerializer
    filterset_class = ModelOutputFilter

    def get_queryset(self):
        return model_outputs_for_user(self.request.user).order_by("instance_id", "model_name")

    @extend_schema(request={"multipart/form-data": PredictionsUploadSerializer},
                   responses={201: PredictionsReportSerializer})
    @action(detail=False, methods=["post"], parser_classes=[MultiPartParser, FormParser], filterset_class=None,
            pagination_class=None)
    def upload(self, request):
        """Import a leaderboard ``predictions.csv`` into one project (owners); atomic, and a refused
        file is named with its row and column."""
        incoming = PredictionsUploadSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        project = owned_project(request, incoming.validated_data["project"])
        report = import_predictions_upload(project=project, upload=incoming.validated_data["file"])
        return Response(PredictionsReportSerializer(report.as_dict()).data, status=status.HTTP_201_CREATED)
