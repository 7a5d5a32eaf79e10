"""The researcher cockpit under /projects/: one URL list per area module."""
from .views import board, data, leaderboard, llm_models, projects, results, review, rounds, tokens, watch, workers

app_name = "cockpit"

urlpatterns = (
    projects.urlpatterns
    + tokens.urlpatterns  # before board's <slug>/
    + board.urlpatterns
    + rounds.urlpatterns
    + data.urlpatterns
    + review.urlpatterns
    + workers.urlpatterns
    + results.urlpatterns
    + leaderboard.urlpatterns
    + watch.urlpatterns
    + llm_models.urlpatterns
)
