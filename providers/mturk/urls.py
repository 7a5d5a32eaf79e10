from django.urls import path

from . import views

app_name = "mturk"

urlpatterns = [
    path("<int:round_id>/", views.task, name="task"),
]
