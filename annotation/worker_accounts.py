"""Local crowd workers made by a project's owner: an account in the workers' group without a
password, the languages they work in, optionally qualified for the project, and the one-time link
on which they set their password (``projects.accounts``)."""
from __future__ import annotations

from django.conf import settings
from django.db import transaction

from projects.accounts import create_account, one_time_link
from projects.permissions import require_owner

from .models import Qualification, Worker
from .services.workers import get_or_create_local_worker, grant_qualification, set_worker_languages


@transaction.atomic
def create_local_worker(*, project, by, username: str, languages=(), qualify: bool = False) -> tuple[Worker, str]:
    """(the new worker, their one-time link). Only an owner of ``project`` makes one; a refusal
    (a taken or invalid name, unknown languages) writes nothing."""
    require_owner(user=by, project=project)
    user = create_account(username=username, groups=(settings.ANNOTATION_WORKER_GROUP,))
    worker = get_or_create_local_worker(user=user)
    if languages:
        worker = set_worker_languages(worker=worker, languages=languages)
    if qualify:
        grant_qualification(worker=worker, project=project, source=Qualification.Source.OWNER, granted_by=by)
    return worker, one_time_link(user)
