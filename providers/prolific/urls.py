from django.urls import path

from . import views

app_name = "prolific"

urlpatterns = [
    path("<int:round_id>/", views.task, name="task"),
]
