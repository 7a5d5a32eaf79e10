"""Leaderboard submissions: the policy, the tokens of outside submitters, and the one path by which
a predictions file becomes models on the board.

``submit_predictions`` imports the file's outputs (matched to the project's instances, atomically)
and queues the judge over the pairs that involve the new models: against every model already on
the board and the human-verified reference. Old pairs are not judged again. The run goes through
the step runs' queue (Celery when a broker is configured, else in-process), so the board updates
as soon as the run finishes; the submitter follows it by the submission's id.
"""
from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from kernel.errors import ServiceError
from datasets_app.models import ModelOutput
from annotation.models import WorkItem
from datasets_app.uploads import import_parsed_predictions, read_predictions_upload
from evaluation.judge.services import REFERENCE
from evaluation.models import JudgedBattle
from llm.config import configured_models, unpriced
from projects.permissions import require_member, require_owner
from stepruns.models import StepRun
from stepruns.services import clean_budget, start_run

from .models import Submission, SubmissionPolicy, SubmissionToken

TOKEN_PREFIX = "cbsub_"  # tells a submission token from a researcher's API token at a glance
MAX_MODELS_PER_SUBMISSION = 3
MAX_ACTIVE_TOKENS = 100
JUDGE_KIND = "judge_outputs"
ACTIVE_STATUSES = (StepRun.Status.QUEUED, StepRun.Status.RUNNING)
UNFINISHED_STATUSES = (StepRun.Status.FAILED, StepRun.Status.STOPPED)
UNMATCHED_KEPT = 50
LAST_USED_RESOLUTION = timedelta(minutes=5)  # a token's last_used_at is written at most this often


class SubmissionRefused(ServiceError):
    """The submission was refused; nothing was stored."""


class SubmissionsClosed(ServiceError):
    """This project does not take submissions from outside."""

    status_code = 403


class SubmissionBusy(ServiceError):
    """A submission of this token is still being judged."""

    status_code = 409


class JudgeUnavailable(ServiceError):
    """No LLM judge is configured for submissions."""

    status_code = 503


class SubmissionTokenNotFound(ServiceError):
    """No such submission token in this project."""

    status_code = 404


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


# --- the policy ----------------------------------------------------------------------------------


def policy_for(project) -> SubmissionPolicy:
    """The project's policy (outside submissions closed until an owner opens them)."""
    policy, _ = SubmissionPolicy.objects.get_or_create(project=project)
    return policy


def set_policy(*, project, user, accepts_outside_submissions: bool, judge_model: str, budget_usd) -> SubmissionPolicy:
    require_owner(user=user, project=project)
    judge_model = (judge_model or "").strip()
    if judge_model and judge_model not in configured_models():
        raise SubmissionRefused(f"unknown judge model {judge_model[:60]!r}; configured: "
                                f"{', '.join(configured_models()) or 'none (set LLM_MODEL)'}")
    budget = clean_budget(budget_usd)
    policy = policy_for(project)
    policy.accepts_outside_submissions = bool(accepts_outside_submissions)
    policy.judge_model, policy.budget_usd = judge_model, budget
    policy.save()
    return policy


def judge_model_for(policy: SubmissionPolicy, *, outsider: bool = False) -> str:
    """The model that judges the project's submissions; refuses when it could not run within a
    budget (an outside submitter is not told about the server's settings)."""
    models = configured_models()
    model = policy.judge_model or (models[0] if models else "")
    problem = None
    if not model or model not in models:
        problem = ("No LLM judge is configured for submissions: set LLM_MODEL (and LLM_BASE_URL or LLM_API_KEY), "
                   "or choose a configured judge model on the leaderboard page.")
    elif unpriced(model):
        problem = (f"The judge model {model} has no price in LLM_PRICES, so the budget of a submission cannot be "
                   "kept; add its price.")
    if problem is not None:
        raise JudgeUnavailable("The judge of this project cannot take submissions now; please tell the project's "
                               "owners." if outsider else problem)
    return model


# --- tokens of outside submitters ----------------------------------------------------------------


def create_token(*, project, user, label: str) -> tuple[SubmissionToken, str]:
    """A new submission token for ``project``: (its record, the token, to be shown once)."""
    require_owner(user=user, project=project)
    label = " ".join((label or "").split())[:100]
    if not label:
        raise SubmissionRefused("Name who will hold the token (e.g. a lab's name).")
    if SubmissionToken.objects.filter(project=project, revoked_at__isnull=True).count() >= MAX_ACTIVE_TOKENS:
        raise SubmissionRefused(f"The project has {MAX_ACTIVE_TOKENS} active submission tokens; revoke one first.")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    record = SubmissionToken.objects.create(project=project, label=label, digest=token_digest(raw),
                                            prefix=raw[:len(TOKEN_PREFIX) + 6], created_by=user)
    return record, raw


def revoke_token(*, project, user, token_id) -> SubmissionToken:
    require_owner(user=user, project=project)
    record = SubmissionToken.objects.filter(project=project, pk=token_id if str(token_id).isdigit() else None).first()
    if record is None:
        raise SubmissionTokenNotFound()
    if record.revoked_at is None:
        record.revoked_at = timezone.now()
        record.save(update_fields=["revoked_at"])
    return record


def token_from_secret(raw: str) -> SubmissionToken | None:
    """The active token whose secret ``raw`` is; records its use (see ``_record_use``)."""
    if not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    record = (SubmissionToken.objects.select_related("project")
              .filter(digest=token_digest(raw), revoked_at__isnull=True).first())
    if record is not None:
        _record_use(record)
    return record


def _record_use(record: SubmissionToken) -> None:
    """Stamp ``last_used_at`` when it is older than ``LAST_USED_RESOLUTION``: a submitter polling its
    submission does not write the token's row on every request. The condition is in the UPDATE
    itself, so requests arriving together stamp it once."""
    now = timezone.now()
    stale_before = now - LAST_USED_RESOLUTION
    if record.last_used_at is not None and record.last_used_at >= stale_before:
        return  # as just read: recent enough, no statement at all
    stamped = (SubmissionToken.objects.filter(pk=record.pk)
               .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=stale_before))
               .update(last_used_at=now))
    if stamped:
        record.last_used_at = now


# --- submissions -----------------------------------------------------------------------------------


def submit_predictions(*, project, upload, token: SubmissionToken | None = None, user=None) -> Submission:
    """Import a predictions file of new models and queue their judging against the board.

    An outside submitter comes with ``token`` (of this project, while the project takes outside
    submissions, one submission at a time); a member with ``user``. The file must add new model
    names only (at most ``MAX_MODELS_PER_SUBMISSION``): a submission never changes a model on the
    board, except one whose own earlier submission failed or stopped at its budget, which the same
    submitter may send again (the old outputs and battles are replaced). Refusals change nothing.
    """
    if token is not None:
        if token.project_id != project.pk or token.revoked_at is not None:
            raise SubmissionTokenNotFound()
        policy = policy_for(project)
        if not policy.accepts_outside_submissions:
            raise SubmissionsClosed(f"The project '{project.slug}' does not take submissions from outside now.")
        label = token.label
    else:
        require_member(user=user, project=project)
        policy = policy_for(project)
        label = user.get_username()
    judge_model = judge_model_for(policy, outsider=token is not None)
    with transaction.atomic():
        if token is not None:
            # One submission of a token at a time; the lock serialises two arriving together.
            SubmissionToken.objects.select_for_update().filter(pk=token.pk).first()
            if Submission.objects.filter(token=token, step_run__status__in=ACTIVE_STATUSES).exists():
                raise SubmissionBusy("Your previous submission is still being judged; submit again when it is done.")
        predictions = read_predictions_upload(upload)  # a malformed file is refused here, naming row and field
        retried = _retried_models(project=project, names=predictions.models, token=token, user=user)
        _check_new_models(predictions.models, on_board=_board_names(project) - set(retried), file_name=predictions.name)
        if retried:
            _withdraw(project=project, names=retried)
        report = import_parsed_predictions(project=project, predictions=predictions)
        new = list(report.per_model)
        on_board = _board_names(project) - set(new)
        kind_parameters = {"models": sorted(on_board | set(new)), "reference": "against", "involving": new}
        run = start_run(project=project, user=user, kind=JUDGE_KIND, model=judge_model, budget_usd=policy.budget_usd,
                        parameters=kind_parameters)
        return Submission.objects.create(
            project=project, token=token, submitted_by=user, submitter_label=label, file_name=report.path,
            model_names=new, rows=report.rows, matched=report.matched, step_run=run,
            unmatched=[[row.row_number, row.reason] for row in report.unmatched[:UNMATCHED_KEPT]],
        )


def _board_names(project) -> set[str]:
    return set(ModelOutput.objects.filter(instance__family__project=project)
               .values_list("model_name", flat=True).distinct())


def _check_new_models(new: list[str], *, on_board: set[str], file_name: str) -> None:
    if len(new) > MAX_MODELS_PER_SUBMISSION:
        raise SubmissionRefused(f"{file_name}: {len(new)} models in one file; a submission adds at most "
                                f"{MAX_MODELS_PER_SUBMISSION}")
    # Names differing only in case would stand beside each other on the board as two models.
    taken_keys = {name.casefold() for name in on_board} | {REFERENCE.casefold()}
    taken = sorted(name for name in new if name.casefold() in taken_keys)
    if taken:
        raise SubmissionRefused(f"{file_name}: the model name(s) {', '.join(taken)} are already on the board; "
                                "a submission adds new models, so name yours differently")


def _retried_models(*, project, names: list[str], token, user) -> list[str]:
    """The names in ``names`` that came only from this submitter's earlier submissions whose judging
    failed or stopped at the budget: submitting them again replaces them."""
    by_name: dict[str, list[Submission]] = {}
    for submission in Submission.objects.filter(project=project).select_related("step_run"):
        for name in submission.model_names:
            by_name.setdefault(name, []).append(submission)
    retried = []
    for name in names:
        earlier = by_name.get(name, [])
        if earlier and all(
            (submission.token_id == token.pk if token is not None
             else submission.token_id is None and submission.submitted_by_id == user.pk)
            and submission.step_run_id and submission.step_run.status in UNFINISHED_STATUSES
            for submission in earlier
        ):
            retried.append(name)
    if retried and WorkItem.objects.filter(
            Q(output_a__model_name__in=retried) | Q(output_b__model_name__in=retried),
            output_a__instance__family__project=project).exists():
        raise SubmissionRefused(f"{', '.join(retried)} is compared in a crowd round of this project and cannot be "
                                "replaced; name the new submission differently")
    return retried


def _withdraw(*, project, names: list[str]) -> None:
    """Remove the outputs of ``names`` and the judge's battles involving them (to be judged again)."""
    JudgedBattle.objects.filter(instance__family__project=project).filter(
        Q(model_a__in=names) | Q(model_b__in=names)).delete()
    ModelOutput.objects.filter(instance__family__project=project, model_name__in=names).delete()


def check_outside_access(token: SubmissionToken) -> None:
    """A token works while its project takes outside submissions (and it is not revoked)."""
    if not policy_for(token.project).accepts_outside_submissions:
        raise SubmissionsClosed(f"The project '{token.project.slug}' does not take submissions from outside now.")


def submissions_for(*, project, token: SubmissionToken | None = None):
    """The project's submissions (only the token's own for an outside submitter), newest first."""
    queryset = Submission.objects.filter(project=project).select_related("step_run", "token")
    return queryset.filter(token=token) if token is not None else queryset


def spent_usd(submission: Submission) -> Decimal:
    return submission.step_run.cost_usd if submission.step_run_id else Decimal(0)
