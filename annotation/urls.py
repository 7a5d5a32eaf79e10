from django.urls import path

from . import api, views

app_name = "annotation"

api_patterns = (
    [
        path("rounds/<int:round_id>/next/", api.NextTaskView.as_view(), name="next"),
        path("assignments/<int:assignment_id>/submit/", api.SubmitView.as_view(), name="submit"),
        path("assignments/<int:assignment_id>/submit-and-next/", api.SubmitAndNextView.as_view(),
             name="submit-and-next"),
        path("assignments/<int:assignment_id>/start/", api.StartView.as_view(), name="start"),
        path("assignments/<int:assignment_id>/return/", api.ReturnView.as_view(), name="return"),
        path("assignments/<int:assignment_id>/report-image/", api.ReportImageView.as_view(), name="report-image"),
    ],
    "annotation-api",
)

urlpatterns = [
    path("", views.work_list, name="work-list"),
    path("settings/", views.worker_settings, name="settings"),
    path("history/", views.work_history, name="history"),
    path("rounds/<int:round_id>/", views.round_page, name="round"),
    path("rounds/<int:round_id>/consent/", views.consent_page, name="consent"),
]
