"""A project's results stored as materialised views of its judgments, and served from storage.

The views are the pages' defaults: the leaderboard of each battle source and method
(``PAGE_BOOTSTRAP_ROUNDS`` rounds, seed 0) and the IRR report at the default threshold. Each is
computed by ``evaluation.results`` exactly as a request computed it before, and stored
(``StoredResult``) with the number of judgments it read, a digest of the table read and when it was
read. Other parameters (more bootstrap rounds, another seed or threshold) are computed on request.

When judgments change (a crowd judgment submitted or rejected, preferences imported, a battle
judged, model scores stored) ``judgments_changed`` records it on the project's ``ResultsRefresh``
after the commit and, when a Celery worker takes tasks (a broker is configured), queues one
recomputation ``RESULTS_REFRESH_DELAY_SECONDS`` later; changes made while one is queued are taken by
it (a pending flag plus a countdown: many judgments, one computation). A view whose table did not
change (same digest) is not recomputed. Without a broker there is no background: the pages show
that newer judgments are waiting and offer "recompute now", which computes in the request.
"""
from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from django.conf import settings
from django.core.cache import cache
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.utils import timezone, translation

from annotation.models import Assignment
from annotation.task_types.base import TaskType
from kernel.errors import ServiceError
from stats import irr

from .models import ResultsRefresh, StoredResult
from .results import (
    METHODS,
    PAGE_BOOTSTRAP_ROUNDS,
    SOURCES,
    Result,
    ResultsError,
    check_leaderboard_parameters,
    check_threshold,
    input_digest,
    irr_result,
    irr_results,
    leaderboard,
    leaderboard_result,
)
from .selectors import battles, irr_inputs

logger = logging.getLogger(__name__)

LEADERBOARD, IRR, AGREEMENT = StoredResult.Kind.LEADERBOARD, StoredResult.Kind.IRR, StoredResult.Kind.AGREEMENT
# What the task types' judgments yield (``TaskType.yields``) that the stored results read: battles and
# rankings for the leaderboards and the IRR report, and any for the rounds' agreement so far.
READS = frozenset({"battles", "rankings", "verifications"})


def leaderboard_key(*, source: str, method: str, bootstrap: int, seed: int) -> str:
    return f"{source}/{method}/{bootstrap}/{seed}"


def irr_key(*, threshold: float) -> str:
    return f"{threshold!r}"


def views() -> list[tuple[str, str, dict]]:
    """The stored views of every project: (kind, key, parameters)."""
    stored = []
    for source in SOURCES:
        for method in METHODS:
            parameters = {"source": source, "method": method, "bootstrap": PAGE_BOOTSTRAP_ROUNDS, "seed": 0}
            stored.append((LEADERBOARD, leaderboard_key(**parameters), parameters))
    stored.append((IRR, irr_key(threshold=irr.DEFAULT_THRESHOLD), {"threshold": irr.DEFAULT_THRESHOLD}))
    return stored


def _stored_key(kind: str, parameters: dict) -> str | None:
    key = leaderboard_key(**parameters) if kind == LEADERBOARD else irr_key(**parameters)
    return key if any(kind == k and key == stored for k, stored, _ in views()) else None


# --- computing -----------------------------------------------------------------------------------


def _inputs(project, kind: str, parameters: dict) -> tuple:
    """The tables a view reads, as ``evaluation.results`` reads them."""
    if kind == LEADERBOARD:
        return (battles(source=parameters["source"], project=project),)
    return irr_inputs(project=project)


def _compute(project, kind: str, parameters: dict, frames: tuple) -> Result:
    if kind == LEADERBOARD:
        return leaderboard_result(frames[0], project=project, **parameters)
    return irr_result(*frames, project=project, **parameters)


def judgment_count(table) -> int:
    """The judgments a table holds: the rankings' table has a row per ranked review, so one ranking
    is its row of rank 1; a battle table has a row per judgment."""
    if {"review_id", "rank"} <= set(getattr(table, "columns", ())):
        return int((table["rank"] == 1).sum())
    return len(table)


def _encode(plots: dict[str, bytes]) -> dict[str, str]:
    return {name: base64.b64encode(png).decode("ascii") for name, png in plots.items()}


def refresh_view(*, project, kind: str, key: str, parameters: dict, force: bool = False) -> StoredResult:
    """Read the view's tables and store its result; an unchanged table (same digest) is not
    recomputed unless ``force``d, only marked as read now."""
    read_at = timezone.now()
    frames = _inputs(project, kind, parameters)
    digest = input_digest(*frames)
    existing = StoredResult.objects.filter(project=project, kind=kind, key=key).first()
    if existing is not None and existing.input_digest == digest and not force:
        existing.inputs_read_at = read_at
        existing.save(update_fields=["inputs_read_at"])
        return existing
    started = time.perf_counter()
    try:
        result = _compute(project, kind, parameters, frames)
        data = json.dumps(result.data, ensure_ascii=False, allow_nan=False)
        plots, error = _encode(result.plots), ""
    except ResultsError as refusal:  # judgments that cannot be rated: the page says why
        data, plots, error = "", {}, refusal.message
    values = {"parameters": parameters, "data": data, "plots": plots, "error": error,
              "judgment_count": judgment_count(frames[0]), "input_digest": digest, "inputs_read_at": read_at,
              "computed_at": timezone.now(), "compute_seconds": time.perf_counter() - started}
    try:
        with transaction.atomic():
            stored, _ = StoredResult.objects.update_or_create(project=project, kind=kind, key=key, defaults=values)
    except IntegrityError:  # another refresh stored it first: this one is as new
        StoredResult.objects.filter(project=project, kind=kind, key=key).update(**values)
        stored = StoredResult.objects.get(project=project, kind=kind, key=key)
    return stored


def refresh_results(*, project, force: bool = False) -> list[StoredResult]:
    """Recompute every stored view of the project (the background task's work). The queued flag is
    cleared first, so judgments recorded while this runs queue the next recomputation."""
    state = _state(project.pk)
    if settings.CACHE_URL:
        cache.delete(_QUEUED_KEY.format(project.pk))  # before reading: later changes are written again
    ResultsRefresh.objects.filter(pk=state.pk).update(queued_at=None, started_at=timezone.now())
    stored = [refresh_view(project=project, kind=kind, key=key, parameters=parameters, force=force)
              for kind, key, parameters in views()]
    for round in project.rounds.order_by("pk"):
        stored += refresh_agreement(round=round, force=force)
    ResultsRefresh.objects.filter(pk=state.pk).update(finished_at=timezone.now())
    return stored


def agreement_key(*, round, language: str) -> str:
    return f"round/{round.pk}/{language}"


def _language() -> str:
    """The cockpit language of this request, as ``settings.LANGUAGES`` names it."""
    current = (translation.get_language() or settings.LANGUAGE_CODE).split("-")[0]
    return current if current in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE


def refresh_agreement(*, round, force: bool = False, languages=None) -> list[StoredResult]:
    """Store the round's agreement so far (``TaskType.agreement_so_far``, what the watch pages show)
    in each cockpit language; its input digest is that of the round's counted judgments (a new,
    rejected or confirmed one changes it). A type without agreement stores nothing."""
    handler = round.task_type_handler
    if type(handler).agreement_so_far is TaskType.agreement_so_far:
        return []
    read_at = timezone.now()
    counted = list(Assignment.objects.counted().filter(round=round).order_by("pk").values_list("pk", flat=True))
    digest = input_digest(pd.DataFrame({"assignment": counted}))
    stored = []
    for language in languages or dict(settings.LANGUAGES):
        key = agreement_key(round=round, language=language)
        existing = StoredResult.objects.filter(project_id=round.project_id, kind=AGREEMENT, key=key).first()
        if existing is not None and existing.input_digest == digest and not force:
            existing.inputs_read_at = read_at
            existing.save(update_fields=["inputs_read_at"])
            stored.append(existing)
            continue
        started = time.perf_counter()
        with translation.override(language):
            data = json.dumps(handler.agreement_so_far(round), cls=DjangoJSONEncoder, ensure_ascii=False)
        values = {"parameters": {"round": round.pk, "language": language}, "data": data, "plots": {}, "error": "",
                  "judgment_count": len(counted), "input_digest": digest, "inputs_read_at": read_at,
                  "computed_at": timezone.now(), "compute_seconds": time.perf_counter() - started}
        stored.append(StoredResult.objects.update_or_create(project_id=round.project_id, kind=AGREEMENT, key=key,
                                                            defaults=values)[0])
    return stored


def stored_agreement(round) -> dict | None:
    """The round's agreement so far as stored, in the request's language, with when it was computed
    (``computed_at``) and whether newer judgments wait; computed here once when not stored yet."""
    language = _language()
    key = agreement_key(round=round, language=language)
    stored = StoredResult.objects.filter(project_id=round.project_id, kind=AGREEMENT, key=key).first()
    if stored is None:
        rows = refresh_agreement(round=round, languages=[language])
        if not rows:
            return None
        stored = rows[0]
    data = json.loads(stored.data)
    if data is None:
        return None
    state = ResultsRefresh.objects.filter(project_id=round.project_id).first()
    waiting = bool(state and state.changed_at and state.changed_at > stored.inputs_read_at)
    return {**data, "computed_at": stored.computed_at, "newer_judgments_waiting": waiting}


# --- when judgments change -----------------------------------------------------------------------


def background_available() -> bool:
    """Whether a Celery worker takes the tasks (a broker is configured); without one a task would run
    in the request that queued it."""
    return not settings.CELERY_TASK_ALWAYS_EAGER


def _state(project_id: int) -> ResultsRefresh:
    try:
        with transaction.atomic():
            return ResultsRefresh.objects.get_or_create(project_id=project_id)[0]
    except IntegrityError:  # created by a concurrent request
        return ResultsRefresh.objects.get(project_id=project_id)


def judgments_changed(*, project_id: int | None) -> None:
    """Record that judgments read by the project's results changed (call after the commit) and,
    with a worker, queue one recomputation after the debounce delay unless one is queued."""
    if project_id is None:
        return
    if _queued_in_cache(project_id):
        return  # the queued recomputation has not begun reading: it will see this change
    now = timezone.now()
    if not background_available():
        if not ResultsRefresh.objects.filter(project_id=project_id).update(changed_at=now):
            ResultsRefresh.objects.filter(pk=_state(project_id).pk).update(changed_at=now)
        return
    first = ResultsRefresh.objects.filter(project_id=project_id, queued_at__isnull=True).update(
        changed_at=now, queued_at=now)
    if not first and not ResultsRefresh.objects.filter(project_id=project_id).update(changed_at=now):
        # The project's first change: its flag row did not exist yet.
        state = _state(project_id)
        first = ResultsRefresh.objects.filter(pk=state.pk, queued_at__isnull=True).update(changed_at=now, queued_at=now)
    if first:
        _mark_queued_in_cache(project_id, seconds=settings.RESULTS_REFRESH_DELAY_SECONDS)
        _enqueue(project_id, countdown=settings.RESULTS_REFRESH_DELAY_SECONDS)


# While a recomputation is queued and has not begun reading, a new judgment needs no write: every
# submission would otherwise UPDATE the project's one flag row (a hot row under concurrent workers).
# The mark lives in the shared cache only (Redis: a mark in one process's memory would hide changes
# from the others); the task removes it before it reads, and it expires on its own if the task is
# lost, after which changes are written again.
_QUEUED_KEY = "results:queued:{}"
_QUEUED_MARGIN_SECONDS = 60


def _queued_in_cache(project_id: int) -> bool:
    return bool(settings.CACHE_URL) and cache.get(_QUEUED_KEY.format(project_id)) is not None


def _mark_queued_in_cache(project_id: int, *, seconds: float) -> None:
    if settings.CACHE_URL:
        cache.set(_QUEUED_KEY.format(project_id), 1, timeout=seconds + _QUEUED_MARGIN_SECONDS)


def judgments_changed_on_commit(*, project_id: int | None) -> None:
    """``judgments_changed`` once the current transaction commits (at once outside one)."""
    if project_id is not None:
        transaction.on_commit(lambda: judgments_changed(project_id=project_id), robust=True)


def _enqueue(project_id: int, *, countdown: float, force: bool = False) -> None:
    from kombu.exceptions import OperationalError as BrokerUnavailable

    from .tasks import refresh_results_task

    try:
        refresh_results_task.apply_async(kwargs={"project_id": project_id, "force": force}, countdown=countdown)
    except BrokerUnavailable:
        # The flag stays queued: the next page view sees it waiting and asks again.
        ResultsRefresh.objects.filter(project_id=project_id).update(queued_at=None)
        logger.warning("results of project %s: the task broker does not answer; recomputed when asked again",
                       project_id)


def recompute_now(*, project) -> bool:
    """"Recompute now": queue a recomputation at once with a worker (True), or compute in this
    request without one (False)."""
    if background_available():
        state = _state(project.pk)
        ResultsRefresh.objects.filter(pk=state.pk).update(queued_at=timezone.now())
        _enqueue(project.pk, countdown=0, force=True)
        return True
    refresh_results(project=project, force=True)
    return False


# --- serving -------------------------------------------------------------------------------------


class ResultsComputing(ServiceError):
    """The stored result is being computed for the first time: asked again in a moment, it is there."""

    status_code = 503


@dataclass(frozen=True)
class Served:
    """A result as a page serves it. ``result`` is None while it is being computed for the first
    time; ``stored`` None for parameters computed on request."""

    result: Result | None
    stored: StoredResult | None = None
    changed_at: datetime | None = None
    queued: bool = False

    @property
    def computed_at(self) -> datetime | None:
        return self.stored.computed_at if self.stored else None

    @property
    def waiting(self) -> bool:
        """Judgments recorded after the stored result read its tables."""
        return bool(self.stored and self.changed_at and self.changed_at > self.stored.inputs_read_at)

    @property
    def status(self) -> dict:
        """What the page and the API say about the stored result."""
        if self.stored is None:
            return {"stored": False, "computing": self.result is None}
        return {"stored": True, "computed_at": self.stored.computed_at.isoformat(),
                "judgment_count": self.stored.judgment_count, "input_digest": self.stored.input_digest,
                "compute_seconds": round(self.stored.compute_seconds, 3),
                "newer_judgments_waiting": self.waiting, "recomputation_queued": self.queued}


class _StoredPlots(Mapping):
    """The stored plots by name, each decoded when asked for (a page needs their names only)."""

    def __init__(self, encoded: dict[str, str]):
        self._encoded = encoded

    def __getitem__(self, name: str) -> bytes:
        return base64.b64decode(self._encoded[name])

    def __iter__(self):
        return iter(self._encoded)

    def __len__(self) -> int:
        return len(self._encoded)


def _from_storage(stored: StoredResult) -> Result:
    if stored.error:
        raise ResultsError(stored.error)
    return Result(data=json.loads(stored.data), plots=_StoredPlots(stored.plots))


def _serve(project, kind: str, parameters: dict, on_request) -> Served:
    key = _stored_key(kind, parameters)
    if key is None:
        return Served(result=on_request())
    stored = StoredResult.objects.filter(project=project, kind=kind, key=key).first()
    state = ResultsRefresh.objects.filter(project=project).first()
    changed_at, queued = (state.changed_at, state.queued_at is not None) if state else (None, False)
    if stored is None:
        if not background_available():  # nobody else will: compute this view once, here
            stored = refresh_view(project=project, kind=kind, key=key, parameters=parameters)
        elif not queued:
            state = _state(project.pk)
            if ResultsRefresh.objects.filter(pk=state.pk, queued_at__isnull=True).update(queued_at=timezone.now()):
                _enqueue(project.pk, countdown=0)
            return Served(result=None, changed_at=changed_at, queued=True)
        else:
            return Served(result=None, changed_at=changed_at, queued=True)
    served = Served(result=_from_storage(stored), stored=stored, changed_at=changed_at, queued=queued)
    if served.waiting and not queued and background_available():
        # A change whose queueing was lost (the broker was down): ask again.
        judgments_changed(project_id=project.pk)
    return served


def stored_leaderboard(*, project, source: str = "human", method: str = "elo",
                       bootstrap: int = PAGE_BOOTSTRAP_ROUNDS, seed: int = 0) -> Served:
    """The leaderboard as the page shows it: stored for the page's defaults, computed on request
    (``evaluation.results.leaderboard``) for other parameters."""
    check_leaderboard_parameters(source=source, method=method, bootstrap=bootstrap)
    parameters = {"source": source, "method": method, "bootstrap": bootstrap, "seed": seed}
    return _serve(project, LEADERBOARD, parameters, lambda: leaderboard(project=project, **parameters))


def stored_irr(*, project, threshold: float = irr.DEFAULT_THRESHOLD) -> Served:
    """The IRR report as the page shows it: stored at the default threshold, computed on request
    (``evaluation.results.irr_results``) at another."""
    check_threshold(threshold)
    return _serve(project, IRR, {"threshold": threshold}, lambda: irr_results(project=project, threshold=threshold))
