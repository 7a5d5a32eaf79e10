"""Rounds the pipeline makes for the researcher (verification after captions, re-caption, regenerated
references) belong to the project of the round they follow and take its settings; the round
builder's sources never queue again what already waits in an open round; a verification round stops
handing out tasks for an instance once it is verified."""
from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation import consent, round_builder
from annotation.models import CollectionRound, WorkItem
from annotation.services.engine import request_assignment
from annotation.services.rounds import add_items, cancel_round, close_round, create_round, open_round
from annotation.services.submissions import submit_assignment
from annotation.services.workers import grant_qualification
from annotation.pipeline import (
    generate_and_route_references,
    open_verification_items,
    recaption_discarded,
    regenerate_discarded,
)
from annotation.selectors import work_list_for_worker
from datasets_app.models import Instance, ReferenceCandidate
from llm.params import LLMRunParams
from releases_app.services import make_release
from projects.services import create_project
from tests.annotation.factories import make_candidate, make_family, make_instance, make_review_set, make_worker

from .builders import submit_all, verify

pytestmark = pytest.mark.django_db
PASSWORD = "owner-pass-123"
RULES = {"qualified_only": True, "providers": ["local"], "stop_after_failed_checks": 3}


@pytest.fixture
def owner(settings):
    user = User.objects.create_user("olga", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=settings.RESEARCHER_GROUP)[0])
    return user


@pytest.fixture
def project(owner):
    return create_project(name="Study P", slug="study-p", owner=owner)


def qualified_workers(project, count):
    workers = [make_worker() for _ in range(count)]
    for worker in workers:
        grant_qualification(worker=worker, project=project, source="manual")
    return workers


def caption_round_of(project, instances, **settings) -> CollectionRound:
    """A caption round of ``project`` as the cockpit builds it (only the project's qualified workers)."""
    round = create_round(
        name="Captions", task_type="caption", project=project, workers_per_item=1, language="en",
        reward_per_task=Decimal("0.40"), target_hourly_wage=Decimal("15.00"), time_limit_seconds=900,
        qualification_rules=dict(RULES), consent_text="Study P: we keep your answers.", **settings)
    add_items(round=round, targets=instances)
    return open_round(round=round)


def project_instances(project, count=1):
    family = make_family(project=project)
    return [make_instance(family=family, captions=False) for _ in range(count)]


def judge(*, round, workers, outcome):
    """Each worker accepts the round's study information and gives one verification judgment."""
    for worker in workers:
        if consent.consent_required(round=round):
            consent.record_decision(round=round, worker=worker, accepted=True)
    submit_all(round=round, answers=[{"outcome": outcome, "harmful": False}] * len(workers), workers=workers)


def offered(worker) -> set[int]:
    return {offer.round.pk for offer in work_list_for_worker(worker=worker)}


def test_a_verification_round_made_by_generate_references_belongs_to_the_project_of_the_caption_round(
        llm_settings, client, owner, project, tmp_path, settings):
    settings.RELEASES_ROOT = tmp_path / "releases"
    [instance] = project_instances(project)
    caption_round = caption_round_of(project, [instance])
    captioner, *verifiers = qualified_workers(project, 4)
    consent.record_decision(round=caption_round, worker=captioner, accepted=True)
    submit_all(round=caption_round, answers=[{"captions": ["Two apples on a plate."]}], workers=[captioner])

    out = StringIO()
    call_command("generate_references", stdout=out, verbosity=0)
    round = CollectionRound.objects.get(task_type="verification")
    assert f"verification items added: round {round.pk}: 1 item" in out.getvalue()

    assert round.project == project and round.status == CollectionRound.Status.OPEN
    assert (round.language, round.reward_per_task, round.target_hourly_wage, round.time_limit_seconds) == (
        "en", Decimal("0.40"), Decimal("15.00"), 900)
    assert round.qualification_rules == RULES and round.consent_text == caption_round.consent_text
    assert round.workers_per_item == 3
    client.login(username=owner.username, password=PASSWORD)
    assert client.get(reverse("cockpit:round", kwargs={"slug": project.slug, "round_id": round.pk})).status_code == 200
    assert client.get(f"/api/rounds/{round.pk}/").status_code == 200
    # Offered as the project's rounds are: to its qualified workers, not to every worker.
    outsider = make_worker()
    assert round.pk not in offered(outsider) and caption_round.pk not in offered(outsider)
    assert round.pk in offered(verifiers[0])

    judge(round=round, workers=verifiers, outcome="correct")
    instance.refresh_from_db()
    assert instance.status == Instance.Status.VERIFIED

    release = make_release(project=project, name="p", version="1.0.0", out_dir=tmp_path / "v1", created_by=owner)
    assert release.counts["verifications"] == 3
    card = (tmp_path / "v1" / "README.md").read_text()
    assert f"| {round.name} | verification | 3 |" in card


def discarded_in(project, reason_outcome, llm_client, *, count=1) -> tuple[list[Instance], CollectionRound]:
    """Instances of ``project`` captioned in a caption round of the project, then discarded by the crowd."""
    instances = project_instances(project, count)
    caption_round = caption_round_of(project, instances)
    workers = qualified_workers(project, 3)
    for worker in workers:
        consent.record_decision(round=caption_round, worker=worker, accepted=True)
    submit_all(round=caption_round, answers=[{"captions": ["A blurry photo."]}] * count, workers=workers[:count])
    generate_and_route_references(llm=LLMRunParams(client=llm_client))
    caption_round.refresh_from_db()
    for _ in instances:
        judge(round=caption_round.follow_up_round, workers=workers, outcome=reason_outcome)
    assert {i.status for i in Instance.objects.filter(pk__in=[i.pk for i in instances])} == {"discarded"}
    return instances, caption_round


def test_a_recaption_round_belongs_to_the_project_and_takes_the_settings_of_the_caption_round(
        fake_server, llm_client, project):
    [instance], caption_round = discarded_in(project, "caption_problem", llm_client)

    out = StringIO()
    call_command("recaption_round", "--from-discarded", "caption", stdout=out)

    round = CollectionRound.objects.filter(task_type="caption").exclude(pk=caption_round.pk).get()
    assert f"caption round {round.pk}" in out.getvalue()
    assert round.project == project
    assert (round.reward_per_task, round.time_limit_seconds, round.qualification_rules, round.consent_text) == (
        Decimal("0.40"), 900, RULES, caption_round.consent_text)
    assert round.pk not in offered(make_worker())


def test_a_recaption_of_imported_instances_belongs_to_their_project(project):
    """Instances discarded without a caption round of the platform (imported): the round is their project's."""
    [instance] = project_instances(project)
    Instance.objects.filter(pk=instance.pk).update(status=Instance.Status.DISCARDED, discard_reason="caption")

    report = recaption_discarded(reasons=["caption"])

    assert report.round.project == project


def test_regenerated_references_go_to_a_verification_round_of_the_project_when_the_old_one_is_closed(
        fake_server, llm_client, project):
    [instance], caption_round = discarded_in(project, "response_problem", llm_client)
    close_round(round=caption_round.follow_up_round)

    report = regenerate_discarded(reasons=["response"], llm=LLMRunParams(client=llm_client))

    [round_id] = report.routing.opened_rounds
    round = CollectionRound.objects.get(pk=round_id)
    assert round.project == project and round.qualification_rules == RULES


def test_candidates_captioned_outside_the_platform_get_a_verification_round_of_their_own_project(owner):
    first = create_project(name="First", slug="first", owner=owner)
    second = create_project(name="Second", slug="second", owner=owner)
    candidates = [make_candidate(instance=make_instance(family=make_family(project=project)))
                  for project in (first, second)]

    report = open_verification_items(candidates=candidates)

    assert len(report.opened_rounds) == 2
    rounds = {WorkItem.objects.get(candidate=candidate).round.project for candidate in candidates}
    assert rounds == {first, second}


def test_a_verification_round_that_follows_no_round_pays_what_the_projects_latest_round_pays(owner):
    """Fails where the round the pipeline opened by itself paid the model's default, 0.00, beside the
    project's rounds paying 0.50 USD."""
    project = create_project(name="Paid", slug="paid", owner=owner)
    create_round(name="Pairwise", task_type="pairwise", project=project, reward_per_task=Decimal("0.50"),
                 currency="USD", target_hourly_wage=Decimal("15.00"))
    create_round(name="Ranking", task_type="ranking", project=project, language="ja",
                 reward_per_task=Decimal("40"), currency="JPY", target_hourly_wage=Decimal("2000"))
    create_round(name="Verify before", task_type="verification", project=project,
                 reward_per_task=Decimal("0.20"), currency="USD", target_hourly_wage=Decimal("18.00"))
    candidate = make_candidate(instance=make_instance(family=make_family(project=project)))

    report = open_verification_items(candidates=[candidate])

    (round_id,) = report.opened_rounds
    round = CollectionRound.objects.get(pk=round_id)
    # The latest round of its own task type sets the pay; the language stays the round type's default.
    assert (round.reward_per_task, round.currency, round.target_hourly_wage) == (
        Decimal("0.20"), "USD", Decimal("18.00"))
    assert round.language == "en" and round.project == project


def plan(project, task_type, source, language="en"):
    return round_builder.plan_items(project=project, task_type=task_type, source=source, params={},
                                    language=language)


def test_reference_candidates_already_in_an_open_round_are_not_offered_again(llm_settings, project):
    instances = project_instances(project, 2)
    caption_round = caption_round_of(project, instances)
    workers = qualified_workers(project, 2)
    for worker in workers:
        consent.record_decision(round=caption_round, worker=worker, accepted=True)
    submit_all(round=caption_round, answers=[{"captions": ["A cat."]}] * 2, workers=workers)
    call_command("generate_references", stdout=StringIO(), verbosity=0)
    assert WorkItem.objects.filter(candidate__isnull=False).count() == 2

    with pytest.raises(round_builder.BadItemSource, match="gives no items"):
        plan(project, "verification", "reference_candidates")

    # Also when the open round that holds a candidate belongs to no project (made before rounds
    # took their project); a candidate whose round was cancelled is offered again.
    cancel_round(round=WorkItem.objects.filter(candidate__isnull=False).first().round)
    loose = create_round(name="Loose", task_type="verification", workers_per_item=3)
    held = ReferenceCandidate.objects.get(instance=instances[0])
    add_items(round=loose, targets=[held])
    assert [spec.target for spec in plan(project, "verification", "reference_candidates").specs] == [
        ReferenceCandidate.objects.get(instance=instances[1])]


def test_instances_already_in_an_open_recaption_round_are_not_offered_again(fake_server, llm_client, project):
    instances, _ = discarded_in(project, "caption_problem", llm_client, count=2)
    recaption_discarded(reasons=["caption"])

    with pytest.raises(round_builder.BadItemSource, match="gives no items"):
        plan(project, "caption", "awaiting_caption")


def test_an_instance_whose_open_caption_item_is_complete_is_offered_again_after_a_discard(
        fake_server, llm_client, project):
    """Only an item still waiting holds its instance: the completed item of a caption round that still
    takes items (complete, and reopened by new ones) does not."""
    [instance], caption_round = discarded_in(project, "caption_problem", llm_client)
    report = recaption_discarded(reasons=["caption"])
    cancel_round(round=report.round)
    caption_round.refresh_from_db()
    assert caption_round.status == CollectionRound.Status.COMPLETE

    assert [spec.target for spec in plan(project, "caption", "awaiting_caption").specs] == [instance]


def test_review_sets_already_in_an_open_ranking_round_are_not_offered_again(project):
    review_sets = [make_review_set() for _ in range(2)]
    for review_set in review_sets:
        review_set.project = project
        review_set.save()
    round, _plan = round_builder.create_round_from_source(
        project=project, created_by=None, settings={"name": "Rank", "task_type": "ranking", "workers_per_item": 3},
        source="review_sets", params={"limit": 1})
    open_round(round=round)

    assert [spec.target for spec in plan(project, "ranking", "review_sets").specs] == [review_sets[1]]


def test_a_verification_round_stops_handing_out_tasks_for_an_instance_already_verified(project):
    """Two open rounds hold the same candidate (queued twice before the sources checked every round):
    once one verifies the instance, the other hands out no more tasks for it."""
    instance = make_instance(family=make_family(project=project))
    candidate = make_candidate(instance=instance)
    other = make_candidate(instance=make_instance(family=make_family(project=project)))
    first = create_round(name="A", task_type="verification", workers_per_item=3, project=project)
    add_items(round=first, targets=[candidate])
    open_round(round=first)
    second = create_round(name="B", task_type="verification", workers_per_item=3, project=project)
    add_items(round=second, targets=[candidate, other])
    open_round(round=second)
    started = request_assignment(round=second, worker=(early := make_worker()))
    assert started.item.candidate == candidate

    verify(round=first, outcomes=["correct"] * 3)
    instance.refresh_from_db()
    assert instance.status == Instance.Status.VERIFIED

    late = make_worker()
    assert second.pk in offered(late)  # for the other candidate
    assignment = request_assignment(round=second, worker=late)
    assert assignment.item.candidate == other
    submit_assignment(assignment_id=assignment.pk, worker=late, data={"outcome": "correct", "harmful": False})
    assert second.pk not in offered(late) and request_assignment(round=second, worker=late) is None
    # The same with a rule that takes the careful path (a per-worker limit).
    CollectionRound.objects.filter(pk=second.pk).update(qualification_rules={"max_tasks_per_worker": 5})
    second.refresh_from_db()
    assert request_assignment(round=second, worker=make_worker()).item.candidate == other
    assert started.pk  # the task already handed out stays the worker's to finish


def test_a_recaption_over_discarded_instances_of_two_projects_is_refused_and_changes_nothing(owner, project):
    other = create_project(name="Other", slug="other", owner=owner)
    instances = [*project_instances(project), *project_instances(other)]
    Instance.objects.filter(pk__in=[i.pk for i in instances]).update(status="discarded", discard_reason="caption")

    with pytest.raises(CommandError, match="several projects"):
        call_command("recaption_round", stdout=StringIO())

    assert not CollectionRound.objects.exists()
    assert set(Instance.objects.values_list("status", flat=True)) == {"discarded"}


def test_a_named_verification_round_takes_only_its_own_projects_instances(llm_settings, fake_server, owner, project):
    other = create_project(name="Other", slug="other", owner=owner)
    mine, theirs = (make_instance(family=make_family(project=p)) for p in (project, other))
    Instance.objects.filter(pk__in=[mine.pk, theirs.pk]).update(status="awaiting_reference")
    target = create_round(name="Checks", task_type="verification", project=project, workers_per_item=3)

    # Named instances of another project: refused before any request, nothing changed.
    with pytest.raises(CommandError, match=f"Round {target.pk} takes only its own project's instances"):
        call_command("generate_references", "--verification-round", str(target.pk), "--instances", str(theirs.pk),
                     str(mine.pk), stdout=StringIO(), verbosity=0)
    assert not fake_server.completion_requests and not ReferenceCandidate.objects.exists()

    # None named: only the round's project's instances are asked for and routed to it.
    call_command("generate_references", "--verification-round", str(target.pk), stdout=StringIO(), verbosity=0)
    assert list(ReferenceCandidate.objects.values_list("instance_id", flat=True)) == [mine.pk]
    assert list(WorkItem.objects.values_list("round_id", flat=True)) == [target.pk]
    theirs.refresh_from_db()
    assert theirs.status == "awaiting_reference"
