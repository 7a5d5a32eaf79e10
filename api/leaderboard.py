"""Leaderboard submissions over HTTP: a predictions file in, the judge's board out.

Outside submitters authenticate with a project's submission token (``Authorization: Token
cbsub_…``, made by an owner on the cockpit's leaderboard page, stored as a digest); they see their
own submissions and the judge leaderboard of that project only. Owners may submit with their
researcher token or session too; members read. The work is done by ``leaderboard.services``.
"""
from __future__ import annotations

import io
import json

from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.credentials import CountedCredentialsMixin
from kernel.csv_cells import csv_writer
from evaluation.results import leaderboard as judge_leaderboard
from leaderboard import services
from leaderboard.models import Submission, SubmissionToken
from leaderboard.selectors import image_addresses, test_set
from projects.permissions import is_researcher, require_owner
from stepruns.models import StepRun
from projects.selectors import get_project_for_user

from .access import MAX_ID, Pagination, ResearcherAPIMixin, ResearcherSchema

BOARD_BOOTSTRAP = 200


class SubmissionTokenCheck(BaseAuthentication):
    """``Authorization: Token cbsub_…``: an outside submitter of one project. Other tokens are left
    to the researchers' token authentication."""

    keyword = "Token"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if len(parts) != 2 or parts[0].lower() not in (b"token", b"bearer"):
            return None
        try:
            raw = parts[1].decode("ascii")
        except UnicodeDecodeError:
            return None
        if not raw.startswith(services.TOKEN_PREFIX):
            return None
        record = services.token_from_secret(raw)
        if record is None:
            raise AuthenticationFailed("Invalid or revoked submission token.")
        return AnonymousUser(), record

    def authenticate_header(self, request):
        return self.keyword


class SubmissionTokenAuthentication(CountedCredentialsMixin, SubmissionTokenCheck):
    """A submission token, counted by the sign-in limiter like every credential."""


class SubmissionTokenScheme(OpenApiAuthenticationExtension):
    target_class = "api.leaderboard.SubmissionTokenAuthentication"
    name = "submissionToken"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token cbsub_…`: a project's submission token, from the cockpit's leaderboard page."}


class LeaderboardSubmissionUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="A leaderboard predictions.csv: 'instruction', 'image' or 'images', and "
                                           "one '<model name> prediction' column per new model.")


class LeaderboardSubmissionSerializer(serializers.ModelSerializer):
    status = serializers.CharField(read_only=True, help_text="queued, running, succeeded, stopped (budget) or failed.")
    models = serializers.ListField(source="model_names", child=serializers.CharField())
    unmatched = serializers.ListField(child=serializers.ListField(), help_text="[row, reason] per row left out.")
    judged = serializers.SerializerMethodField(help_text="Judge requests answered / to send.")
    cost_usd = serializers.SerializerMethodField()
    summary = serializers.SerializerMethodField()
    submitter = serializers.CharField(source="submitter_label")

    class Meta:
        model = Submission
        fields = ["id", "status", "models", "file_name", "rows", "matched", "unmatched", "judged", "cost_usd",
                  "summary", "submitter", "created_at"]

    def get_judged(self, submission) -> dict:
        run = submission.step_run
        return {"done": run.done if run else 0, "total": run.total if run else 0}

    def get_cost_usd(self, submission) -> str:
        return format(services.spent_usd(submission).normalize(), "f")

    def get_summary(self, submission) -> str:
        run = submission.step_run
        if run is None:
            return ""
        if run.status == StepRun.Status.FAILED and self.context.get("outsider"):
            # The reason may name the server's settings; the project's owners see it on the run's page.
            return "The judging failed; the project's owners can see why. You may submit the same file again."
        return run.summary


class LeaderboardAccess:
    """An outside submitter's token (its own project only) or a researcher member of the project."""

    authentication_classes = [SubmissionTokenAuthentication, *ResearcherAPIMixin.authentication_classes]
    permission_classes = []  # decided per project by ``project_and_token``
    schema = ResearcherSchema()

    def project_and_token(self, request, slug: str):
        token = request.auth if isinstance(request.auth, SubmissionToken) else None
        if token is not None:
            if token.project.slug != slug:
                raise NotFound(f"No project '{slug[:100]}' for this token.")
            services.check_outside_access(token)
            return token.project, token
        if not (request.user and request.user.is_authenticated):
            raise NotAuthenticated()
        if not is_researcher(request.user):
            raise NotFound(f"No project '{slug[:100]}' among yours.")
        return get_project_for_user(user=request.user, slug=slug), None


@extend_schema(tags=["leaderboard"])
class LeaderboardView(LeaderboardAccess, APIView):
    @extend_schema(parameters=[OpenApiParameter("method", str, enum=["elo", "bt"], default="elo")],
                   responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="As the results page's JSON download: models best first with rating, interval, rank, battles, win rate against the reference; per-category win rates.")})
    def get(self, request, slug: str):
        """The project's judge leaderboard: ratings with bootstrap intervals, win rate against the
        reference, per-category win rates (as the results page shows them)."""
        project, _token = self.project_and_token(request, slug)
        method = request.query_params.get("method", "elo")
        return Response(judge_leaderboard(project=project, source="judge", method=method,
                                          bootstrap=BOARD_BOOTSTRAP).data)


class TestSetInstanceSerializer(serializers.Serializer):
    instance_id = serializers.IntegerField(source="pk")
    instruction = serializers.CharField()
    instruction_category = serializers.CharField(source="family.name")
    images = serializers.SerializerMethodField()

    def get_images(self, instance) -> list[str]:
        return image_addresses(instance, self.context["request"].build_absolute_uri)


@extend_schema(tags=["leaderboard"])
class TestSetView(LeaderboardAccess, APIView):
    @extend_schema(responses={200: TestSetInstanceSerializer(many=True)})
    def get(self, request, slug: str):
        """The instances to answer: id, instruction, category and image URLs. A predictions file
        names each row's ``instance_id`` and ``instruction`` (``template.csv`` has them filled in)."""
        project, _token = self.project_and_token(request, slug)
        paginator = Pagination()
        page = paginator.paginate_queryset(test_set(project), request, view=self)
        return paginator.get_paginated_response(
            TestSetInstanceSerializer(page, many=True, context={"request": request}).data)


@extend_schema(tags=["leaderboard"])
class PredictionsTemplateView(LeaderboardAccess, APIView):
    @extend_schema(responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="A predictions.csv "
                              "with every instance of the test set and an empty 'my-model prediction' column.")})
    def get(self, request, slug: str):
        """A predictions file to fill in: rename the last column to your model and write its answers."""
        project, _token = self.project_and_token(request, slug)
        buffer = io.StringIO()
        writer = csv_writer(buffer)  # instructions and categories neutralised for spreadsheets
        writer.writerow(["instance_id", "instruction", "instruction_category", "images", "my-model prediction"])
        for instance in test_set(project):
            writer.writerow([instance.pk, instance.instruction, instance.family.name,
                             json.dumps(image_addresses(instance, request.build_absolute_uri)), ""])
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{project.slug}-predictions-template.csv"'
        return response


@extend_schema(tags=["leaderboard"])
class SubmissionListView(LeaderboardAccess, APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(responses={200: LeaderboardSubmissionSerializer(many=True)})
    def get(self, request, slug: str):
        """Submissions to the project's board, newest first (an outside submitter sees their own)."""
        project, token = self.project_and_token(request, slug)
        paginator = Pagination()
        page = paginator.paginate_queryset(services.submissions_for(project=project, token=token), request, view=self)
        return paginator.get_paginated_response(
            LeaderboardSubmissionSerializer(page, many=True, context={"outsider": token is not None}).data)

    @extend_schema(request={"multipart/form-data": LeaderboardSubmissionUploadSerializer},
                   responses={202: LeaderboardSubmissionSerializer})
    def post(self, request, slug: str):
        """Submit a predictions file: its new models are judged against the board and the reference
        in the background; follow the submission until its status is ``succeeded``."""
        project, token = self.project_and_token(request, slug)
        if token is None:
            require_owner(user=request.user, project=project)
        incoming = LeaderboardSubmissionUploadSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        submission = services.submit_predictions(project=project, upload=incoming.validated_data["file"], token=token,
                                                 user=None if token is not None else request.user)
        submission.refresh_from_db()  # the judge may already have run (no broker: in-process)
        return Response(LeaderboardSubmissionSerializer(submission, context={"outsider": token is not None}).data,
                        status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["leaderboard"])
class SubmissionDetailView(LeaderboardAccess, APIView):
    @extend_schema(responses={200: LeaderboardSubmissionSerializer})
    def get(self, request, slug: str, pk: int):
        """One submission: its status, the judge's progress and cost."""
        project, token = self.project_and_token(request, slug)
        submission = services.submissions_for(project=project, token=token).filter(pk=min(pk, MAX_ID)).first()
        if submission is None:
            raise NotFound(f"No submission {pk} here.")
        return Response(LeaderboardSubmissionSerializer(submission, context={"outsider": token is not None}).data)
