"""The researcher cockpit under /projects/: one URL list per area module."""
from .views import board, projects, results, review, rounds, workers
from .views import watch

app_name = "cockpit"

urlpatterns = (
    projects.urlpatterns
    + board.urlpatterns
    + rounds.urlpatterns
    + review.urlpatterns
    + workers.urlpatterns
    + results.urlpatterns
    + watch.urlpatterns
)
