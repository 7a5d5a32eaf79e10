"""Who may do crowd work on the local pages: logged-in users in the workers group."""
from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework.permissions import BasePermission

from .auth import IN_WORKER_GROUP


def is_local_worker(user) -> bool:
    if not (user.is_authenticated and user.is_active):
        return False
    if hasattr(user, IN_WORKER_GROUP):  # read with the user by the session's backend
        return bool(getattr(user, IN_WORKER_GROUP))
    return user.groups.filter(name=settings.ANNOTATION_WORKER_GROUP).exists()


NOT_A_WORKER = _("Only crowd workers may take tasks; ask the researcher to add you to the workers group.")


class IsLocalWorker(BasePermission):
    message = NOT_A_WORKER

    def has_permission(self, request, view) -> bool:
        return is_local_worker(request.user)
