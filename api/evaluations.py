"""Evaluations in the researcher API: model ratings (leaderboard) from the crowd's or the LLM
judge's battles, and the IRR report; both computed as the ``ratings`` and ``irr_report``
commands compute them from the database, for one project."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from annotation.selectors import rounds_for_user
from evaluation.selectors import BATTLE_SOURCES, database_ratings, irr_database_report
from evaluation.stored_results import ResultsComputing, stored_irr, stored_leaderboard
from projects.selectors import get_project_for_user
from stats import irr

from .access import MAX_ID, ProjectSlugField, ResearcherAPIMixin

MAX_BOOTSTRAP = 2000


class EvaluationQuerySerializer(serializers.Serializer):
    project = ProjectSlugField()
    round = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID, help_text="One round of the project only.")

    def project_and_round(self, user):
        project = get_project_for_user(user=user, slug=self.validated_data["project"])
        round_id = self.validated_data.get("round")
        if round_id is None:
            return project, None
        round = rounds_for_user(user).filter(pk=round_id, project=project).first()
        if round is None:
            raise NotFound(f"No round {round_id} in project '{project.slug}'.")
        return project, round


class RatingsQuerySerializer(EvaluationQuerySerializer):
    source = serializers.ChoiceField(choices=BATTLE_SOURCES, default="human",
                                     help_text="The crowd's pairwise judgments or the LLM judge's battles.")
    method = serializers.ChoiceField(choices=["elo", "bt"], default="elo")
    bootstrap = serializers.IntegerField(required=False, min_value=1, max_value=MAX_BOOTSTRAP)
    seed = serializers.IntegerField(default=0, min_value=0)
    reference = serializers.CharField(required=False, max_length=200,
                                      help_text="Also report each model's win rate against this one.")


class IRRQuerySerializer(EvaluationQuerySerializer):
    threshold = serializers.FloatField(default=irr.DEFAULT_THRESHOLD, min_value=-1.0, max_value=1.0)


class StoredQuerySerializer(serializers.Serializer):
    project = ProjectSlugField()


class StoredLeaderboardQuerySerializer(StoredQuerySerializer):
    source = serializers.ChoiceField(choices=BATTLE_SOURCES, default="human",
                                     help_text="The crowd's pairwise judgments or the LLM judge's battles.")
    method = serializers.ChoiceField(choices=["elo", "bt"], default="elo")


def _stored(served) -> dict:
    if served.result is None:
        raise ResultsComputing("These results are being computed; ask again in a moment.")
    return {"status": served.status, "result": served.result.data}


STORED_DESCRIPTION = ("``status``: when the stored result was computed (``computed_at``), from how many judgments, the "
                      "digest of its inputs, whether newer judgments are waiting; ``result``: what the cockpit's JSON "
                      "download gives. 503 while it is computed for the first time.")


class RatingRowSerializer(serializers.Serializer):
    model = serializers.CharField()
    rating = serializers.FloatField()
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    rank = serializers.IntegerField()
    battles = serializers.IntegerField()


class RatingsSerializer(serializers.Serializer):
    method = serializers.CharField()
    models = RatingRowSerializer(many=True, help_text="Best first.")
    win_rate_matrix = serializers.DictField(child=serializers.DictField(child=serializers.FloatField(allow_null=True)))


class EvaluationViewSet(ResearcherAPIMixin, viewsets.ViewSet):
    """Leaderboards and IRR reports of a project (members)."""

    @extend_schema(parameters=[RatingsQuerySerializer], responses={200: OpenApiResponse(
        RatingsSerializer, description="The ratings as ``manage.py ratings --json`` writes them (more keys "
                                       "with a reference model, bootstrap or categories).")})
    @action(detail=False, methods=["get"])
    def ratings(self, request):
        """Elo or Bradley–Terry ratings of the project's models from human or judge battles."""
        query = RatingsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        project, round = query.project_and_round(request.user)
        data = query.validated_data
        result = database_ratings(source=data["source"], round=round, project=project, method=data["method"],
                                  bootstrap=data.get("bootstrap"), seed=data["seed"],
                                  reference=data.get("reference"))
        return Response(result.to_dict())

    @extend_schema(parameters=[IRRQuerySerializer], responses={200: OpenApiResponse(
        OpenApiTypes.OBJECT, description="The report as ``manage.py irr_report --json`` writes it: threshold, "
                                         "summary, items, sweep, models, human_reference, prompt_rank.")})
    @action(detail=False, methods=["get"], url_path="irr-report")
    def irr_report(self, request):
        """The IRR report of the project's ranking rounds: agreement, threshold sweep, models vs humans."""
        query = IRRQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        project, round = query.project_and_round(request.user)
        return Response(irr_database_report(round=round, project=project, threshold=query.validated_data["threshold"]))

    @extend_schema(parameters=[StoredLeaderboardQuerySerializer], responses={
        200: OpenApiResponse(OpenApiTypes.OBJECT, description=STORED_DESCRIPTION),
        503: OpenApiResponse(OpenApiTypes.OBJECT, description="Being computed for the first time.")})
    @action(detail=False, methods=["get"], url_path="stored-leaderboard")
    def stored_leaderboard(self, request):
        """The project's stored leaderboard (the cockpit results page's, 200 bootstrap rounds, seed 0)."""
        query = StoredLeaderboardQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        project = get_project_for_user(user=request.user, slug=query.validated_data["project"])
        return Response(_stored(stored_leaderboard(project=project, source=query.validated_data["source"],
                                                   method=query.validated_data["method"])))

    @extend_schema(parameters=[StoredQuerySerializer], responses={
        200: OpenApiResponse(OpenApiTypes.OBJECT, description=STORED_DESCRIPTION),
        503: OpenApiResponse(OpenApiTypes.OBJECT, description="Being computed for the first time.")})
    @action(detail=False, methods=["get"], url_path="stored-irr")
    def stored_irr(self, request):
        """The project's stored IRR report (the cockpit IRR page's, at the default threshold)."""
        query = StoredQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        project = get_project_for_user(user=request.user, slug=query.validated_data["project"])
        return Response(_stored(stored_irr(project=project)))
