"""Writes of workers: the local worker record, stated languages, qualifications, work history seen."""
from __future__ import annotations

from typing import Iterable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ..auth import IN_WORKER_GROUP, forget_cached_user
from ..errors import InvalidSubmission, InvalidTransition, message_of
from ..models import Qualification, Worker


def local_worker_for(*, user) -> Worker | None:
    """The worker record of a user who may work on the local pages (active, in the workers group), or
    None. One query when the record exists (the common case: every API request of a worker)."""
    from ..permissions import is_local_worker

    if not (user.is_authenticated and user.is_active):
        return None
    if hasattr(user, IN_WORKER_GROUP) and "crowd_worker" in user._state.fields_cache:
        # Loaded with the user by the session's backend (``annotation.auth``): no query.
        if not getattr(user, IN_WORKER_GROUP):
            return None
        worker = user._state.fields_cache["crowd_worker"]
        if worker is not None and worker.provider == Worker.LOCAL and worker.external_id == str(user.pk):
            return worker
        return get_or_create_local_worker(user=user)
    worker = Worker.objects.filter(
        provider=Worker.LOCAL, external_id=str(user.pk), user=user,
        user__groups__name=settings.ANNOTATION_WORKER_GROUP,
    ).first()
    if worker is not None:
        return worker
    return get_or_create_local_worker(user=user) if is_local_worker(user) else None


def get_or_create_local_worker(*, user) -> Worker:
    # A plain read first: every request of a known worker comes here, and get_or_create's savepoint
    # would cost two more round trips each time.
    worker = Worker.objects.filter(provider=Worker.LOCAL, external_id=str(user.pk)).first()
    if worker is None:
        with transaction.atomic():
            worker, _created = Worker.objects.get_or_create(
                provider=Worker.LOCAL, external_id=str(user.pk), defaults={"user": user}
            )
    # A cached copy of the user (``annotation.auth``) did not have the record: the next request reads it.
    forget_cached_user(user.pk)
    return worker


def worker_changed(worker: Worker) -> None:
    """What the services that block, qualify or change a worker call in their transaction: a cached
    copy of the worker's user is not served once it commits (``annotation.auth``)."""
    forget_cached_user(worker.user_id)


@transaction.atomic
def set_worker_languages(*, worker: Worker, languages: Iterable[str], page_language: str | None = None) -> Worker:
    """The languages a worker works in (codes of ``Language``), as the worker states them, and the
    language of crowdbench's pages for them (``page_language``; "" for the round's; None: unchanged)."""
    locked = Worker.objects.select_for_update().get(pk=worker.pk)
    locked.languages = sorted(set(languages))
    if page_language is not None:
        locked.page_language = page_language
    try:
        locked.full_clean(validate_constraints=False)
    except ValidationError as error:
        raise InvalidSubmission(message_of(error)) from None
    locked.save(update_fields=["languages", "page_language"])
    worker_changed(locked)
    return locked


def grant_qualification(*, worker: Worker, project, source: str, granted_by=None) -> tuple[Qualification, bool]:
    """Allow the worker onto the project's ``qualified_only`` rounds; (the qualification, whether new)."""
    if project is None:
        raise InvalidTransition(_("Only rounds of a project have qualified workers."))
    with transaction.atomic():
        outcome = Qualification.objects.get_or_create(
            worker=worker, project=project, defaults={"source": source, "granted_by": granted_by}
        )
        if outcome[1]:
            worker_changed(worker)
    return outcome


def mark_work_history_seen(*, worker: Worker) -> None:
    """The worker has looked at their work and its reviews: feedback given until now is no longer new."""
    worker.work_history_seen_at = timezone.now()
    with transaction.atomic():
        Worker.objects.filter(pk=worker.pk).update(work_history_seen_at=worker.work_history_seen_at)
        worker_changed(worker)
