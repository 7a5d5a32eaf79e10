from django.urls import path

from . import api, views

app_name = "annotation"

api_patterns = (
    [
        path("rounds/<int:round_id>/next/", api.NextTaskView.as_view(), name="next"),
        path("assignments/<int:assignment_id>/submit/", api.SubmitView.as_view(), name="submit"),
        path("assignments/<int:assignment_id>/return/", api.ReturnView.as_view(), name="return"),
    ],
    "annotation-api",
)

urlpatterns = [
    path("", views.work_list, name="work-list"),
    path("rounds/<int:round_id>/", views.round_page, name="round"),
]
