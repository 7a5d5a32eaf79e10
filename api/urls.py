"""The researcher REST API at /api/: one router over the modules of api/, the OpenAPI
schema and its documentation page (assets served locally). The worker and provider endpoints
(/api/work/, /api/providers/) are mounted separately in crowdbench/urls.py."""
from django.urls import path
from drf_spectacular.views import SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from . import datasets, evaluations, leaderboard, projects, rounds, tokens
from .access import ResearcherAPIMixin
from .schema_views import SchemaView
from .worker_schema import WORKER_SCHEMA_SETTINGS

app_name = "api"



class ResearcherAPIRootView(DefaultRouter.APIRootView):
    """The list of endpoints at /api/: the same authentication and permissions as every endpoint."""

    authentication_classes = ResearcherAPIMixin.authentication_classes
    permission_classes = ResearcherAPIMixin.permission_classes


class ResearcherRouter(DefaultRouter):
    APIRootView = ResearcherAPIRootView


router = ResearcherRouter()
router.register("projects", projects.ProjectViewSet, basename="project")
router.register("families", datasets.FamilyViewSet, basename="family")
router.register("instances", datasets.InstanceViewSet, basename="instance")
router.register("images", datasets.ImageViewSet, basename="image")
router.register("review-sets", datasets.ReviewSetViewSet, basename="review-set")
router.register("model-outputs", datasets.ModelOutputViewSet, basename="model-output")
router.register("rounds", rounds.RoundViewSet, basename="round")
router.register("items", rounds.WorkItemViewSet, basename="item")
router.register("submissions", rounds.SubmissionViewSet, basename="submission")
router.register("evaluations", evaluations.EvaluationViewSet, basename="evaluation")
router.register("releases", projects.ReleaseViewSet, basename="release")
router.register("tokens", tokens.ApiTokenViewSet, basename="token")

urlpatterns = [
    path("schema/", SchemaView.as_view(), name="schema"),
    # The worker and provider endpoints (/api/work/, /api/providers/) have their own schema; schemas are
    # made one at a time and kept per process (api/schema_views.py).
    path("work/schema/", SchemaView.as_view(schema_name="worker", custom_settings=WORKER_SCHEMA_SETTINGS),
         name="worker-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    # A release's files keep their own names (no trailing slash), e.g. /api/releases/1/files/SHA256SUMS
    path("releases/<int:pk>/files/<path:path>", projects.ReleaseViewSet.as_view({"get": "download"}),
         name="release-download"),
    path("releases/<int:pk>/archive.zip", projects.ReleaseViewSet.as_view({"get": "archive"}),
         name="release-archive"),
    # Leaderboard submissions: outside submitters' tokens reach these paths only.
    path("leaderboard/<slug:slug>/", leaderboard.LeaderboardView.as_view(), name="leaderboard"),
    path("leaderboard/<slug:slug>/instances/", leaderboard.TestSetView.as_view(), name="leaderboard-instances"),
    path("leaderboard/<slug:slug>/template.csv", leaderboard.PredictionsTemplateView.as_view(),
         name="leaderboard-template"),
    path("leaderboard/<slug:slug>/submissions/", leaderboard.SubmissionListView.as_view(),
         name="leaderboard-submissions"),
    path("leaderboard/<slug:slug>/submissions/<int:pk>/", leaderboard.SubmissionDetailView.as_view(),
         name="leaderboard-submission"),
    *router.urls,
]
