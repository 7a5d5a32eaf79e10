from django.urls import path

from . import views

app_name = "providers"

urlpatterns = [
    path("mturk/<int:round_id>/", views.mturk_task, name="mturk-task"),
    path("prolific/<int:round_id>/", views.prolific_task, name="prolific-task"),
]

api_patterns = (
    [path("assignments/<int:assignment_id>/submit/", views.ProviderSubmitView.as_view(), name="submit")],
    "providers-api",
)
