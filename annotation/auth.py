"""The session's user and, for a crowd worker, their worker record and workers-group membership in
one query: every request of the worker API needs all three (``services.workers.local_worker_for``)."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db.models import Exists, OuterRef

from djangokit.prepared import PreparedQuery

# Set on users this backend loads: whether they are in the workers group, read with the user row.
IN_WORKER_GROUP = "in_crowd_worker_group"


class UserWithWorkerBackend(ModelBackend):
    """Django's model backend (same logins, same permissions); only the per-request user load differs."""

    def get_user(self, user_id):
        try:
            user_id = int(user_id)
        except (TypeError, ValueError):
            return None
        user = _user_with_worker.first(settings.ANNOTATION_WORKER_GROUP, user_id=user_id)
        return user if user is not None and self.user_can_authenticate(user) else None


def _build_user_with_worker(group_name, user_id: int):
    model = get_user_model()
    in_group = model.groups.through.objects.filter(user_id=OuterRef("pk"), group__name=group_name)
    return (model._default_manager.select_related("crowd_worker")
            .annotate(**{IN_WORKER_GROUP: Exists(in_group)}).filter(pk=user_id).order_by()[:1])


# Every request of a logged-in user loads it: compiled once (the group's name is the shape).
_user_with_worker = PreparedQuery(_build_user_with_worker)
