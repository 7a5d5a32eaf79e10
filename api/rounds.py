"""Crowd rounds of the researcher API: rounds (create, add items, open, close, publish), their
work items, and the submissions with their review through the one review path."""
from __future__ import annotations

import django_filters
from django.conf import settings
from django.db import models
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from annotation import round_builder
from annotation.models import Assignment, CollectionRound, WorkItem
from annotation.selectors import assignments_for_user, round_progress, rounds_for_user, work_items_for_user
from annotation.services import rounds as crowd_rounds
from annotation.services.rounds import close_round, create_round, open_round
from annotation.task_types.base import TARGET_FIELDS
from projects.permissions import require_owner
from providers.registry import PROVIDERS
from providers.review import DECISIONS, review_submissions
from providers.services import publish_round

from .access import MAX_ID, ProjectSlugField, ResearcherAPIMixin, owned_project

MAX_ITEMS_PER_REQUEST = 1000
MAX_REVIEWS_PER_REQUEST = 500


class ProgressSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    items_completed = serializers.IntegerField()
    assignments = serializers.DictField(child=serializers.IntegerField(), help_text="Assignments by status.")
    judgments_counted = serializers.IntegerField()
    spent = serializers.DecimalField(max_digits=12, decimal_places=2)
    budget_cap = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)
    effective_hourly_wage = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    target_hourly_wage = serializers.DecimalField(max_digits=12, decimal_places=2)


class RoundSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    progress = serializers.SerializerMethodField()

    class Meta:
        model = CollectionRound
        fields = ["id", "project", "name", "task_type", "status", "language", "workers_per_item",
                  "reward_per_task", "currency", "target_hourly_wage", "time_limit_seconds",
                  "qualification_rules", "budget_cap", "instructions", "created_at", "opened_at", "closed_at",
                  "progress"]

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, round) -> dict:
        return ProgressSerializer(round_progress(round=round)).data


class RoundCreateSerializer(serializers.ModelSerializer):
    """The fields of ``annotation.services.rounds.create_round``; their limits, defaults and choices are the
    model's (the service checks them all again)."""

    project = ProjectSlugField()

    class Meta:
        model = CollectionRound
        fields = ["project", "name", "task_type", "language", "workers_per_item", "reward_per_task", "currency",
                  "target_hourly_wage", "time_limit_seconds", "qualification_rules", "budget_cap", "instructions"]
        extra_kwargs = {
            # Checked against the registries by the service, whose refusal names what is registered.
            "task_type": {"validators": [], "help_text": "A registered task type, e.g. pairwise or ranking."},
            "qualification_rules": {"validators": []},
        }

    def build_standard_field(self, field_name, model_field):
        """The model's default is the field's default, so the schema shows it and the service gets it."""
        field_class, kwargs = super().build_standard_field(field_name, model_field)
        if model_field.has_default():
            kwargs.pop("required", None)
            kwargs["default"] = model_field.default
        elif model_field.null:
            kwargs["default"] = None
        return field_class, kwargs


class RoundEditSerializer(RoundCreateSerializer):
    """A draft's settings, the fields and limits of ``RoundCreateSerializer``, each optional
    (``annotation.services.rounds.edit_round``); a round keeps its project and task type."""

    class Meta(RoundCreateSerializer.Meta):
        fields = [name for name in RoundCreateSerializer.Meta.fields if name not in ("project", "task_type")]

    def validate(self, data):
        fixed = sorted({"project", "task_type"} & set(self.initial_data))
        if fixed:
            raise serializers.ValidationError({name: ["A round keeps its own; clone it or create a new round."]
                                               for name in fixed})
        if not data:
            raise serializers.ValidationError(f"name a setting to change: {', '.join(self.fields)}")
        return data


class CloneSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200,
                                 help_text="The new draft's name; empty: the round's name with \"(copy)\".")


class ItemTargetSerializer(serializers.Serializer):
    """One item's targets by id, as the round's task type takes them (e.g. output_a + output_b for
    pairwise, review_set for ranking, instance for caption)."""

    family = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    instance = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    candidate = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    output_a = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    output_b = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    reference = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    review_set = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    gold_answer = serializers.DictField(required=False, help_text="Makes this a gold item with this answer.")

    def validate(self, data):
        if not any(name in data for name in TARGET_FIELDS):
            raise serializers.ValidationError(f"name at least one target: {', '.join(TARGET_FIELDS)}")
        return data


class AddItemsSerializer(serializers.Serializer):
    items = ItemTargetSerializer(many=True, allow_empty=False, max_length=MAX_ITEMS_PER_REQUEST)


class AddedItemsSerializer(serializers.Serializer):
    added = serializers.IntegerField()
    item_ids = serializers.ListField(child=serializers.IntegerField())


class AddFromSourceSerializer(serializers.Serializer):
    source = serializers.CharField(max_length=50, help_text="An item source of the round's task type, e.g. "
                                                            "model_outputs (pairwise) or review_sets (ranking).")
    params = serializers.DictField(required=False, default=dict,
                                   help_text='The source\'s parameters, e.g. {"sampler": "all_pairs", "seed": 1}.')
    gold_answers = serializers.DictField(required=False, default=dict,
                                         help_text='Planned item number (from 1) -> expected result, e.g. '
                                                   '{"3": {"winner": "b"}}.')


class AddedFromSourceSerializer(serializers.Serializer):
    added = serializers.IntegerField()
    source = serializers.CharField()
    params = serializers.DictField(help_text="The parameters as used (a drawn seed included): the same plan again.")
    summary = serializers.DictField()
    balance = serializers.DictField(help_text="Pairwise: items per model and per instance.")


class PublishOptionsSerializer(serializers.Serializer):
    """The options ``manage.py publish_round`` takes; kept with the publication, so a rerun asks for the same."""

    min_approval_rate = serializers.IntegerField(required=False, min_value=0, max_value=100, help_text="MTurk.")
    min_approved_hits = serializers.IntegerField(required=False, min_value=0, max_value=10**9, help_text="MTurk.")
    locales = serializers.ListField(child=serializers.RegexField(r"^[A-Z]{2}$"), required=False, max_length=50,
                                    help_text="MTurk: ISO country codes, e.g. US.")
    masters = serializers.BooleanField(required=False, help_text="MTurk.")
    qualification_type_id = serializers.CharField(required=False, max_length=100, help_text="MTurk.")
    qualification_min_score = serializers.IntegerField(required=False, min_value=0, max_value=100,
                                                       help_text="MTurk: lowest score on our qualification.")
    estimated_minutes = serializers.IntegerField(required=False, min_value=1, max_value=24 * 60,
                                                 help_text="Prolific: estimated completion time.")


class PublishSerializer(serializers.Serializer):
    provider = serializers.ChoiceField(choices=[], help_text="A registered crowd provider.")
    dry_run = serializers.BooleanField(default=False, help_text="Rehearse on a fake with simulated workers; "
                                                                "nothing is kept and nobody is paid.")
    options = PublishOptionsSerializer(required=False, default=dict)
    expected_seconds = serializers.FloatField(required=False, allow_null=True, default=None, min_value=1)
    accuracy = serializers.FloatField(default=0.9, min_value=0, max_value=1, help_text="Dry run only.")
    median_seconds = serializers.FloatField(default=60.0, min_value=1, max_value=86400, help_text="Dry run only.")
    seed = serializers.IntegerField(required=False, allow_null=True, default=None, help_text="Dry run only.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].choices = sorted(PROVIDERS)
        self.fields["provider"].default = settings.PROVIDERS_DEFAULT


class PublishResultSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    provider = serializers.CharField()
    tasks_created = serializers.IntegerField(required=False)
    tasks_existing = serializers.IntegerField(required=False)
    publication_status = serializers.CharField(required=False)
    estimate = serializers.DictField(required=False, child=serializers.CharField())
    report = serializers.ListField(child=serializers.CharField(), required=False,
                                   help_text="Dry run: what the rehearsal did and would cost.")


class RoundFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="project__slug", help_text="Project slug.")

    class Meta:
        model = CollectionRound
        fields = ["project", "task_type", "status", "language"]


def _target_models() -> dict[str, type[models.Model]]:
    return {name: WorkItem._meta.get_field(name).related_model for name in TARGET_FIELDS}


def _project_lookup(model) -> str:
    """How a target model reaches its project (families and review sets directly, the rest through
    their instance)."""
    names = {field.name for field in model._meta.get_fields()}
    if "project" in names:
        return "project"
    if "family" in names:
        return "family__project"
    return "instance__family__project"


class RoundViewSet(ResearcherAPIMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Collection rounds of your projects, with their progress; owners create and run them."""

    serializer_class = RoundSerializer
    filterset_class = RoundFilter

    def get_queryset(self):
        return rounds_for_user(self.request.user).select_related("project").order_by("-created_at", "-id")

    @extend_schema(request=RoundCreateSerializer, responses={201: RoundSerializer})
    def create(self, request, *args, **kwargs):
        incoming = RoundCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = dict(incoming.validated_data)
        project = owned_project(request, data.pop("project"))
        round = create_round(**data, project=project, created_by=request.user)
        return Response(self.get_serializer(round).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=RoundEditSerializer, responses={200: RoundSerializer})
    def partial_update(self, request, *args, **kwargs):
        """Change a draft round's settings, checked as on creation; a round that is not a draft is
        refused (409) and nothing changes. Items: ``add-items`` and ``add-items-from-source``."""
        round = self.get_object()
        incoming = RoundEditSerializer(data=request.data, partial=True)
        incoming.is_valid(raise_exception=True)
        round = crowd_rounds.edit_round(round=round, changes=dict(incoming.validated_data))
        return Response(self.get_serializer(round).data)

    @extend_schema(request=CloneSerializer, responses={201: RoundSerializer})
    @action(detail=True, methods=["post"], filterset_class=None)
    def clone(self, request, pk=None):
        """A new draft of the same project with this round's settings and items (any status)."""
        round = self.get_object()
        incoming = CloneSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        name = incoming.validated_data.get("name") or f"{round.name} (copy)"[:200]
        copy = round_builder.clone(round=round, created_by=request.user, name=name)
        return Response(self.get_serializer(copy).data, status=status.HTTP_201_CREATED)

    def _resolve_targets(self, round, entries) -> tuple[list, dict[int, dict]]:
        """The task type's targets for each entry, all of the round's project; 404 names what is missing."""
        handler = round.task_type_handler
        models_by_field = _target_models()
        wanted: dict[str, set[int]] = {}
        for entry in entries:
            for name in TARGET_FIELDS:
                if name in entry:
                    wanted.setdefault(name, set()).add(entry[name])
        found: dict[str, dict[int, models.Model]] = {}
        for name, ids in wanted.items():
            model = models_by_field[name]
            objects = model.objects.filter(pk__in=ids, **{_project_lookup(model): round.project})
            found[name] = {obj.pk: obj for obj in objects}
            missing = sorted(ids - set(found[name]))
            if missing:
                raise NotFound(f"items: no {name} with id {', '.join(map(str, missing[:10]))} in project "
                               f"'{round.project.slug}'.")
        targets, gold = [], {}
        for index, entry in enumerate(entries):
            present = [found[name][entry[name]] for name in TARGET_FIELDS if name in entry]
            targets.append(present[0] if handler.target_model is not None and len(present) == 1 else tuple(present))
            if "gold_answer" in entry:
                gold[index] = entry["gold_answer"]
        return targets, gold

    @extend_schema(request=AddItemsSerializer, responses={201: AddedItemsSerializer})
    @action(detail=True, methods=["post"], url_path="add-items", filterset_class=None)
    def add_items(self, request, pk=None):
        """Add items, one per entry, naming their targets by id (``annotation.services.rounds.add_items``)."""
        round = self.get_object()
        incoming = AddItemsSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        targets, gold = self._resolve_targets(round, incoming.validated_data["items"])
        items = crowd_rounds.add_items(round=round, targets=targets, gold_answers=gold)
        return Response({"added": len(items), "item_ids": [item.pk for item in items]}, status=status.HTTP_201_CREATED)

    @extend_schema(request=AddFromSourceSerializer, responses={201: AddedFromSourceSerializer})
    @action(detail=True, methods=["post"], url_path="add-items-from-source", filterset_class=None)
    def add_items_from_source(self, request, pk=None):
        """Add the items an item source gives (objects of the round's project only), all or nothing
        (``annotation.round_builder.add_items_from_source``)."""
        round = self.get_object()
        incoming = AddFromSourceSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        plan = round_builder.add_items_from_source(round=round, source=data["source"], params=data["params"],
                                                   gold_answers=data["gold_answers"])
        described = plan.as_dict()
        return Response({"added": len(plan), **{key: described[key] for key in ("source", "params", "summary",
                                                                                 "balance")}},
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: RoundSerializer})
    @action(detail=True, methods=["post"], filterset_class=None)
    def open(self, request, pk=None):
        """Open a draft round to workers."""
        round = open_round(round=self.get_object())
        return Response(self.get_serializer(round).data)

    @extend_schema(request=None, responses={200: RoundSerializer})
    @action(detail=True, methods=["post"], filterset_class=None)
    def close(self, request, pk=None):
        """Close an open round."""
        round = close_round(round=self.get_object())
        return Response(self.get_serializer(round).data)

    @extend_schema(request=PublishSerializer, responses={200: PublishResultSerializer})
    @action(detail=True, methods=["post"], filterset_class=None)
    def publish(self, request, pk=None):
        """Publish the round on a crowd provider after checking cost against budget and balance, or
        rehearse it (``dry_run``)."""
        round = self.get_object()
        incoming = PublishSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        if data["dry_run"]:
            from providers.dry_run import rehearse

            report = rehearse(round=round, provider_name=data["provider"], options=dict(data["options"]),
                              accuracy=data["accuracy"], median_seconds=data["median_seconds"], seed=data["seed"])
            return Response({"dry_run": True, "provider": data["provider"], "report": report.lines()})
        result = publish_round(round=round, provider_name=data["provider"], options=dict(data["options"]),
                               expected_seconds=data["expected_seconds"])
        publication = result.publication
        return Response({
            "dry_run": False, "provider": data["provider"], "tasks_created": result.tasks_created,
            "tasks_existing": result.tasks_existing, "publication_status": publication.status,
            "estimate": publication.details.get("estimate", {}),
        })


class WorkItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = WorkItem
        fields = ["id", "round", "position", *TARGET_FIELDS, "side_a_name", "side_b_name", "is_gold",
                  "gold_answer", "completed_at", "aggregate_result"]


class WorkItemFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="round__project__slug", help_text="Project slug.")
    completed = django_filters.BooleanFilter(field_name="completed_at", lookup_expr="isnull", exclude=True)

    class Meta:
        model = WorkItem
        fields = ["project", "round", "is_gold", "completed"]


class WorkItemViewSet(ResearcherAPIMixin, viewsets.ReadOnlyModelViewSet):
    """Work items of your projects' rounds."""

    serializer_class = WorkItemSerializer
    filterset_class = WorkItemFilter

    def get_queryset(self):
        return work_items_for_user(self.request.user).select_related("round__project").order_by("round_id", "position")


class SubmissionSerializer(serializers.ModelSerializer):
    worker = serializers.SerializerMethodField(help_text="The worker's provider and id there.")

    class Meta:
        model = Assignment
        fields = ["id", "round", "item", "worker", "status", "review_status", "confirmation", "accepted_at",
                  "submitted_at", "duration_seconds", "result", "review_feedback"]

    def get_worker(self, assignment) -> str:
        return f"{assignment.worker.provider}:{assignment.worker.external_id}"


class SubmissionFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(field_name="round__project__slug", help_text="Project slug.")

    class Meta:
        model = Assignment
        fields = ["project", "round", "item", "status", "review_status", "confirmation"]


class ReviewRequestSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=MAX_ID), allow_empty=False,
                                max_length=MAX_REVIEWS_PER_REQUEST, help_text="Submission (assignment) ids.")
    decision = serializers.ChoiceField(choices=sorted(DECISIONS))
    feedback = serializers.CharField(required=False, allow_blank=True, default="", max_length=1000,
                                     help_text="Sent to the worker (MTurk RequesterFeedback, Prolific message).")


class ReviewFailureSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    reason = serializers.CharField()


class ReviewReportSerializer(serializers.Serializer):
    done = serializers.ListField(child=serializers.IntegerField())
    already = serializers.ListField(child=serializers.IntegerField(), help_text="Had this decision already.")
    failed = ReviewFailureSerializer(many=True, help_text="Nothing was recorded for these.")


class SubmissionViewSet(ResearcherAPIMixin, viewsets.ReadOnlyModelViewSet):
    """Workers' submissions (assignments) in your projects' rounds; owners approve or reject them."""

    serializer_class = SubmissionSerializer
    filterset_class = SubmissionFilter

    def get_queryset(self):
        return (assignments_for_user(self.request.user).select_related("worker", "round__project")
                .order_by("-submitted_at", "-id"))

    @extend_schema(request=ReviewRequestSerializer, responses={200: ReviewReportSerializer})
    @action(detail=False, methods=["post"], filterset_class=None, pagination_class=None)
    def review(self, request):
        """Approve or reject submissions in bulk, with feedback, through the one review path (paying or
        rejecting at the provider). Every id must be yours to review, or nothing is done."""
        incoming = ReviewRequestSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        ids = sorted(set(data["ids"]))
        assignments = list(self.get_queryset().filter(pk__in=ids))
        missing = sorted(set(ids) - {a.pk for a in assignments})
        if missing:
            raise NotFound(f"No submission with id {', '.join(map(str, missing[:10]))} among yours.")
        for project in {a.round.project for a in assignments}:
            require_owner(user=request.user, project=project)
        report = review_submissions(assignments=assignments, decision=data["decision"], feedback=data["feedback"])
        return Response({
            "done": [a.pk for a in report.done], "already": [a.pk for a in report.already],
            "failed": [{"id": a.pk, "reason": reason} for a, reason in report.failed],
        })
