"""MTurk through boto3 against the fake: publish, sync, approve, bonus, block, expire, faults."""
from __future__ import annotations

import random
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.models import Assignment
from annotation.services.engine import expire_stale_assignments
from annotation.services.rounds import close_round
from providers import services
from providers.base import InsufficientBalance, OverBudget, ProviderError, ProviderNotConfigured
from providers.models import BonusPayment, Publication
from providers.mturk.models import HIT
from providers.mturk.provider import MTurkProvider, external_question, parse_answers, submit_hosts
from providers.mturk.rehearsal import simulate_mturk_worker
from providers.review import review_submissions

pytestmark = pytest.mark.django_db


def provider():
    return MTurkProvider(retry_pause=0)


def publish(round, **options):
    return services.publish_round(round=round, provider_name="mturk", options=options, provider=provider())


def work(fake, round, workers=2, **kwargs):
    rng = random.Random(1)
    return sum(
        simulate_mturk_worker(fake=fake, round=round, worker_id=f"AWORKER{n}", rng=rng, accuracy=1.0,
                              median_seconds=kwargs.get("median_seconds", 60), save_here=kwargs.get("save_here", True))
        for n in range(workers)
    )


def test_publish_creates_one_hit_per_item_with_an_https_external_question(mturk_fake, round_factory):
    round = round_factory(items=3, workers_per_item=2)
    result = publish(round, min_approval_rate=98, locales=["US", "JP"], masters=True)
    assert (result.tasks_created, result.tasks_existing) == (3, 0)
    publication = Publication.objects.get(round=round, provider="mturk")
    assert publication.status == Publication.Status.PUBLISHED and publication.external_id
    created = mturk_fake.calls("CreateHITWithHITType")
    assert len(created) == 3
    for call in created:
        assert call.params["MaxAssignments"] == 2
        url = f"https://crowdbench.example.org/work/mturk/{round.pk}/"
        assert f"<ExternalURL>{url}</ExternalURL>" in call.params["Question"]
        assert len(call.params["UniqueRequestToken"]) <= 64
    hit_type = mturk_fake.calls("CreateHITType")[0].params
    assert hit_type["Reward"] == "0.50"
    kinds = {r["QualificationTypeId"] for r in hit_type["QualificationRequirements"]}
    assert kinds == {"000000000000000000L0", "00000000000000000071", "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6"}
    assert HIT.objects.filter(publication=publication).count() == 3


def test_rerun_of_publish_creates_nothing_twice(mturk_fake, round_factory):
    round = round_factory(items=3)
    publish(round)
    again = publish(round)
    assert (again.tasks_created, again.tasks_existing) == (0, 3)
    calls = mturk_fake.calls("CreateHITWithHITType")
    assert len(calls) == 3 == len({call.params["UniqueRequestToken"] for call in calls})


def test_lost_create_hit_answer_is_recovered_as_hit_already_exists(mturk_fake, round_factory):
    round = round_factory(items=2)
    mturk_fake.fail_next(operation="CreateHITWithHITType", after_processing=True)
    publish(round)
    # botocore retried the first HIT: the fake saw its token twice but made one HIT.
    calls = mturk_fake.calls("CreateHITWithHITType")
    assert len(calls) == 3
    assert calls[0].params["UniqueRequestToken"] == calls[1].params["UniqueRequestToken"]
    assert calls[1].status == 400  # HitAlreadyExists, taken as success
    assert HIT.objects.count() == 2
    listed = provider().client.list_hits(MaxResults=100)["HITs"]
    assert sorted(h["HITId"] for h in listed) == sorted(HIT.objects.values_list("hit_id", flat=True))


def test_throttling_and_5xx_mid_publish_then_a_rerun_leave_no_duplicate(mturk_fake, round_factory):
    round = round_factory(items=4)
    mturk_fake.throttle_next(count=4, operation="CreateHITWithHITType")
    # More lost answers in a row than the policy's attempts: publishing stops with an error.
    mturk_fake.fail_next(count=12, operation="CreateHITWithHITType", after_processing=True)
    with pytest.raises(ProviderError):
        MTurkProvider(retry_pause=0, max_attempts=2).publish(
            round=round, publication=Publication.objects.create(round=round, provider="mturk"))
    mturk_fake.clear_faults()
    publish(round)
    listed = provider().client.list_hits(MaxResults=100)["HITs"]
    assert len(listed) == 4 == HIT.objects.count()


def test_balance_must_cover_rewards_and_fees_before_publishing(mturk_fake, round_factory):
    round = round_factory(items=2, workers_per_item=5)  # 10 × (0.50 + 0.10) = 6.00
    mturk_fake.set_balance("5.99")
    with pytest.raises(InsufficientBalance):
        publish(round)
    assert not mturk_fake.calls("CreateHITWithHITType")
    mturk_fake.set_balance("6.00")
    publish(round)


def test_over_budget_round_is_not_published(mturk_fake, round_factory):
    round = round_factory(items=2, workers_per_item=2, budget_cap=Decimal("2.39"))  # needs 4 × 0.60
    with pytest.raises(OverBudget):
        publish(round)
    assert not mturk_fake.calls()


def test_estimate_uses_40_percent_fee_from_ten_assignments(round_factory):
    small = services.estimate_cost(round=round_factory(items=1, workers_per_item=9), provider=provider())
    large = services.estimate_cost(round=round_factory(items=1, workers_per_item=10), provider=provider())
    assert small.fees == Decimal("0.90") and large.fees == Decimal("2.00")
    assert large.total == Decimal("7.00")


def test_sync_links_saved_work_recovers_lost_saves_and_reports_strangers(mturk_fake, round_factory):
    round = round_factory(items=2, workers_per_item=2)
    publish(round)
    assert work(mturk_fake, round, workers=1) == 2
    # A second worker whose saves never reached us: accepted here, answers only at MTurk.
    rng = random.Random(2)
    for worker_id in ("ALOST1", "ALOST2"):
        # Each keeps the lost task open here, so takes only one HIT of the round.
        assert simulate_mturk_worker(fake=mturk_fake, round=round, worker_id=worker_id, rng=rng, accuracy=1,
                                     median_seconds=30, save_here=False) == 1
    report_before = Assignment.objects.filter(round=round, status=Assignment.Status.SUBMITTED).count()
    assert report_before == 2
    report = services.sync_round(round=round, providers={"mturk": provider()})
    assert (report.linked, report.recovered) == (2, 2)
    assert report.unmatched == []
    assert Assignment.objects.filter(round=round, status=Assignment.Status.SUBMITTED).count() == 4
    # A HIT slot taken at MTurk by a worker who never reached our server is reported.
    round2 = round_factory(items=1, workers_per_item=1)
    publish(round2)
    hit = HIT.objects.get(publication__round=round2)
    mturk_fake.complete_assignment(hit.hit_id, {"crowdbench_answers": '{"choice":"left"}'}, worker_id="ASTRANGER")
    report = services.sync_round(round=round2, providers={"mturk": provider()})
    assert [row["worker"] for row in report.unmatched] == ["ASTRANGER"]


def test_sync_pages_through_next_token_and_survives_throttling(mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=5)
    publish(round)
    assert work(mturk_fake, round, workers=5) == 5
    mturk_fake.throttle_next(count=4, operation="ListAssignmentsForHIT")
    paging = MTurkProvider(retry_pause=0, max_attempts=5, page_size=2)
    report = services.sync_round(round=round, providers={"mturk": paging})
    assert report.linked == 5
    pages = [c for c in mturk_fake.calls("ListAssignmentsForHIT") if not c.error]
    assert len(pages) == 3 and sum(1 for c in pages if c.params.get("NextToken")) == 2


def test_pay_approves_once_even_when_answers_are_lost(mturk_fake, round_factory):
    round = round_factory(items=2, workers_per_item=2)
    publish(round)
    work(mturk_fake, round, workers=2)
    mturk_fake.fail_next(count=1, operation="ApproveAssignment", after_processing=True)
    report = services.pay_round(round=round, providers={"mturk": provider()})
    assert report.approved == 4 and not report.errors
    assert mturk_fake.total_paid("reward") == "2.00"
    # A rerun approves nothing again and pays nothing again.
    again = services.pay_round(round=round, providers={"mturk": provider()})
    assert again.approved == 0
    assert mturk_fake.total_paid("reward") == "2.00"
    assert Assignment.objects.filter(round=round, review_status="approved").count() == 4


def test_approval_that_mturk_already_made_is_not_an_error(mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    publish(round)
    work(mturk_fake, round, workers=1)
    assignment = Assignment.objects.get(round=round)
    provider().client.approve_assignment(AssignmentId=assignment.provider_assignment_id)
    review_submissions(assignments=[assignment], decision="approve", providers={"mturk": provider()})
    assignment.refresh_from_db()
    assert assignment.review_status == "approved"
    assert mturk_fake.total_paid("reward") == "0.50"


def test_top_up_bonus_is_paid_once_through_faults_and_reruns(mturk_fake, round_factory):
    # 0.50 for a 300 s task is 6.00/h; the 18.00/h target needs 1.50, so 1.00 each on top.
    round = round_factory(items=2, workers_per_item=1)
    publish(round)
    work(mturk_fake, round, workers=1, median_seconds=300)
    Assignment.objects.filter(round=round).update(duration_seconds=300)
    mturk_fake.fail_next(count=1, operation="SendBonus", after_processing=True)
    mturk_fake.throttle_next(count=1, operation="SendBonus")
    report = services.pay_round(round=round, top_up=True, providers={"mturk": provider()})
    assert report.top_up_per_task == Decimal("1.00")
    assert (report.bonuses_granted, report.bonuses_paid) == (2, 2)
    assert mturk_fake.total_paid("bonus") == "2.00"
    tokens = [c.params["UniqueRequestToken"] for c in mturk_fake.calls("SendBonus")]
    assert len(set(tokens)) == 2
    # Rerunning the top-up grants and pays nothing more, even after a change in the median.
    Assignment.objects.filter(round=round).update(duration_seconds=600)
    again = services.pay_round(round=round, top_up=True, providers={"mturk": provider()})
    assert (again.bonuses_granted, again.bonuses_paid) == (0, 0)
    assert mturk_fake.total_paid("bonus") == "2.00"
    assert set(BonusPayment.objects.values_list("status", flat=True)) == {"paid"}


def test_bonus_whose_call_keeps_failing_stays_pending_and_is_paid_once_by_the_rerun(mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    publish(round)
    work(mturk_fake, round, workers=1, median_seconds=300)
    Assignment.objects.filter(round=round).update(duration_seconds=300)
    mturk_fake.fail_next(count=20, operation="SendBonus", after_processing=True)
    impatient = MTurkProvider(retry_pause=0, max_attempts=1)
    first = services.pay_round(round=round, top_up=True, providers={"mturk": impatient})
    assert first.bonuses_unsettled == 1
    assert BonusPayment.objects.get().status == "sending"
    assert mturk_fake.total_paid("bonus") == "1.00"  # the lost answer did pay
    mturk_fake.clear_faults()
    second = services.pay_round(round=round, top_up=True, providers={"mturk": provider()})
    assert second.bonuses_paid == 1
    assert mturk_fake.total_paid("bonus") == "1.00"
    assert BonusPayment.objects.get().status == "paid"


def test_top_ups_never_take_the_round_past_its_budget_cap(mturk_fake, round_factory):
    # Rewards with fees: 3 × 0.60 = 1.80; each top-up costs 1.00 + 0.20.
    round = round_factory(items=3, workers_per_item=1, budget_cap=Decimal("3.00"))
    services.publish_round(round=round, provider_name="mturk", provider=provider(), expected_seconds=0)
    work(mturk_fake, round, workers=1)
    Assignment.objects.filter(round=round).update(duration_seconds=300)
    report = services.pay_round(round=round, top_up=True, providers={"mturk": provider()})
    assert (report.bonuses_granted, report.skipped_for_budget) == (1, 2)
    assert services.committed_spend(round=round) <= round.budget_cap


def test_block_and_expire(mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=2)
    publish(round)
    work(mturk_fake, round, workers=1)
    worker = Assignment.objects.get().worker
    services.block_worker(worker=worker, reason="Answered at random on attention checks.")
    assert worker.is_blocked
    assert provider().client.list_worker_blocks()["WorkerBlocks"][0]["WorkerId"] == worker.external_id
    services.expire_round(round=round, providers={"mturk": provider()})
    hit = provider().client.get_hit(HITId=HIT.objects.get().hit_id)["HIT"]
    assert hit["HITStatus"] == "Reviewable"
    assert Publication.objects.get().status == "expired"


def test_answers_xml_and_question_helpers():
    xml = ('<?xml version="1.0" encoding="ASCII"?><QuestionFormAnswers xmlns="http://mechanicalturk.amazonaws.com/'
           'AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"><Answer><QuestionIdentifier>q1'
           '</QuestionIdentifier><FreeText>caf&#233;</FreeText></Answer><Answer><QuestionIdentifier>q2'
           '</QuestionIdentifier><SelectionIdentifier>a</SelectionIdentifier><SelectionIdentifier>b'
           '</SelectionIdentifier></Answer></QuestionFormAnswers>')
    assert parse_answers(xml) == {"q1": "café", "q2": ["a", "b"]}
    assert "&amp;" in external_question(url="https://x.example/?a=1&b=2", frame_height=800)


def test_submit_hosts_are_mturk_and_the_configured_endpoint(settings):
    settings.MTURK_ENDPOINT_URL = ""
    assert submit_hosts() == {"https://workersandbox.mturk.com"}
    settings.MTURK_ENVIRONMENT = "production"
    assert submit_hosts() == {"https://www.mturk.com"}


def test_commands_publish_sync_and_pay_against_the_fake(mturk_fake, round_factory, capsys):
    round = round_factory(items=2, workers_per_item=1)
    call_command("estimate_cost", str(round.pk), "--provider", "mturk", "--expected-seconds", "300")
    assert "total 3.60" in capsys.readouterr().out  # 2 × (0.50 + 0.10) + 2 × (1.00 + 0.20)
    call_command("publish_round", str(round.pk), "--provider", "mturk")
    call_command("publish_round", str(round.pk), "--provider", "mturk")
    assert "0 task(s) created, 2 already there" in capsys.readouterr().out
    work(mturk_fake, round, workers=1)
    call_command("sync_round", str(round.pk))
    assert "2 linked" in capsys.readouterr().out
    call_command("pay_round", str(round.pk))
    call_command("pay_round", str(round.pk))
    assert mturk_fake.total_paid("reward") == "1.00"
    close_round(round=round)
    call_command("expire_round", str(round.pk))
    worker = Assignment.objects.first().worker
    call_command("block_worker", "mturk", worker.external_id, "--reason", "Copied answers between tasks.")
    assert len(mturk_fake.calls("CreateWorkerBlock")) == 1


def test_5xx_mid_sync_stops_cleanly_and_the_rerun_loses_nothing(mturk_fake, round_factory):
    round = round_factory(items=3, workers_per_item=1)
    publish(round)
    rng = random.Random(5)
    simulate_mturk_worker(fake=mturk_fake, round=round, worker_id="ALOSTSAVE", rng=rng, accuracy=1,
                          median_seconds=30, save_here=False)
    work(mturk_fake, round, workers=1)
    # Listing keeps failing with 503 past every retry: the sync stops; the rerun picks everything up.
    mturk_fake.reset_calls()
    mturk_fake.fail_next(count=30, operation="ListAssignmentsForHIT", status=503)
    with pytest.raises(ProviderError):
        services.sync_round(round=round, providers={"mturk": MTurkProvider(retry_pause=0, max_attempts=2)})
    mturk_fake.clear_faults()
    report = services.sync_round(round=round, providers={"mturk": provider()})
    again = services.sync_round(round=round, providers={"mturk": provider()})
    assert (report.recovered, report.unmatched) == (1, [])
    assert (again.recovered, again.linked) == (0, 3)
    assert Assignment.objects.filter(round=round, status="submitted").count() == 3


def test_a_returned_and_retaken_hit_follows_the_new_assignment_id(mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    publish(round)
    hit = HIT.objects.get()
    worker = services.get_or_create_provider_worker(provider="mturk", external_id="ABACK")
    first = mturk_fake.accept_assignment(hit.hit_id, "ABACK")
    services.request_provider_assignment(round=round, worker=worker, item=hit.item, provider_assignment_id=first,
                                         provider_task_id=hit.hit_id)
    mturk_fake.return_assignment(first)
    second = mturk_fake.accept_assignment(hit.hit_id, "ABACK")
    assignment = services.request_provider_assignment(round=round, worker=worker, item=hit.item,
                                                      provider_assignment_id=second, provider_task_id=hit.hit_id)
    assert assignment.provider_assignment_id == second
    assert Assignment.objects.count() == 1


def test_expired_hits_are_deleted_once_their_work_is_reviewed(mturk_fake, round_factory, capsys):
    round = round_factory(items=2, workers_per_item=1)
    publish(round)
    work(mturk_fake, round, workers=1)
    call_command("expire_round", str(round.pk), "--delete")
    assert "not deleted yet (work awaiting review): " + ", ".join(
        HIT.objects.order_by("pk").values_list("hit_id", flat=True)) in capsys.readouterr().out
    services.pay_round(round=round, providers={"mturk": provider()})
    assert services.delete_round_tasks(round=round, providers={"mturk": provider()}) == []
    assert provider().client.list_hits()["NumResults"] == 0


def test_bonus_refused_for_lack_of_funds_is_paid_by_a_later_run_once(mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    publish(round)
    work(mturk_fake, round, workers=1)
    Assignment.objects.filter(round=round).update(duration_seconds=300)
    services.pay_round(round=round, providers={"mturk": provider()})
    mturk_fake.set_balance("0.50")
    refused = services.pay_round(round=round, top_up=True, providers={"mturk": provider()})
    assert (refused.bonuses_granted, refused.bonuses_failed) == (1, 1)
    assert BonusPayment.objects.get().status == "failed" and mturk_fake.total_paid("bonus") == "0.00"
    mturk_fake.set_balance("100.00")
    paid = services.pay_round(round=round, top_up=True, providers={"mturk": provider()})
    assert (paid.bonuses_granted, paid.bonuses_paid) == (0, 1)
    services.pay_round(round=round, top_up=True, providers={"mturk": provider()})
    assert mturk_fake.total_paid("bonus") == "1.00"


def test_lost_create_hit_answer_finds_the_hit_across_every_page(mturk_fake, round_factory):
    publish(round_factory(items=5, workers_per_item=1))  # earlier HITs fill the first pages
    round = round_factory(items=1, workers_per_item=1)
    mturk_fake.fail_next(operation="CreateHITWithHITType", after_processing=True)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0, page_size=2))
    hit = HIT.objects.get(publication__round=round)
    # The lost answer (500) was retried with the same token (400 HitAlreadyExists): no second HIT.
    assert [c.status for c in mturk_fake.calls("CreateHITWithHITType")][-2:] == [500, 400]
    listing = mturk_fake.calls("ListHITs")
    assert len(listing) == 3 and [bool(c.params.get("NextToken")) for c in listing] == [False, True, True]
    listed = provider().client.list_hits(MaxResults=100)["HITs"]
    assert len(listed) == HIT.objects.count() == 6 and hit.hit_id in {h["HITId"] for h in listed}


def _lost_save(mturk_fake, round):
    """A worker submits at MTurk, but our own save never arrives."""
    assert simulate_mturk_worker(fake=mturk_fake, round=round, worker_id="ALATE", rng=random.Random(5),
                                 accuracy=1, median_seconds=30, save_here=False) == 1
    assignment = Assignment.objects.get(round=round)
    remote = provider().client.get_assignment(AssignmentId=assignment.provider_assignment_id)["Assignment"]
    return assignment, remote["SubmitTime"]


def test_sync_after_the_time_limit_keeps_mturks_submit_time(mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    publish(round)
    assignment, submit_time = _lost_save(mturk_fake, round)
    # The task's time ran out here after MTurk received the work; the sync comes later still.
    Assignment.objects.filter(pk=assignment.pk).update(
        accepted_at=submit_time - timedelta(seconds=90), expires_at=submit_time + timedelta(seconds=1))
    time.sleep(1.5)
    assert expire_stale_assignments(round=round) == 1
    report = services.sync_round(round=round, providers={"mturk": provider()})
    assert (report.recovered, report.unmatched) == (1, [])
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.submitted_at == submit_time and assignment.duration_seconds == 90
    assert assignment.payload["choice"] in ("left", "right")


def test_sync_does_not_import_work_that_reached_mturk_after_the_time_limit(mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    publish(round)
    assignment, submit_time = _lost_save(mturk_fake, round)
    Assignment.objects.filter(pk=assignment.pk).update(
        accepted_at=submit_time - timedelta(seconds=90), expires_at=submit_time - timedelta(seconds=1))
    report = services.sync_round(round=round, providers={"mturk": provider()})
    assert report.recovered == 0 and [row["worker"] for row in report.unmatched] == ["ALATE"]
    assert "time for this task ran out" in report.unmatched[0]["problem"]
    assignment.refresh_from_db()
    assert assignment.status != Assignment.Status.SUBMITTED


def test_a_reward_mturk_refuses_is_a_provider_refusal_naming_mturks_reason(mturk_fake, round_factory):
    """MTurk's own "no" (here a reward below its minimum) reaches the caller as ProviderRefused
    with MTurk's message, not as a raw botocore error (which pages and the API would turn into a 500)."""
    from providers.base import ProviderRefused

    round = round_factory(items=1, reward="0.00")
    with pytest.raises(ProviderRefused, match="Reward"):
        publish(round)
    assert not HIT.objects.exists()
    assert not mturk_fake.calls("CreateHITWithHITType")


def test_a_connection_closed_before_createhit_answers_is_retried_with_the_same_token_and_publishes_once(
    mturk_fake, round_factory
):
    round = round_factory(items=3)
    # The HIT of the first item is made, then the connection closes before MTurk answers:
    # botocore raises ConnectionClosedError on the real boto3 path.
    mturk_fake.drop_next(operation="CreateHITWithHITType")
    result = publish(round)
    assert (result.tasks_created, result.tasks_existing) == (2, 1)
    calls = mturk_fake.calls("CreateHITWithHITType")
    assert [call.error for call in calls[:2]] == ["connection closed", "RequestError"]
    assert calls[0].params["UniqueRequestToken"] == calls[1].params["UniqueRequestToken"]
    listed = provider().client.list_hits(MaxResults=100)["HITs"]
    assert len(listed) == 3 == HIT.objects.count()
    assert sorted(h["HITId"] for h in listed) == sorted(HIT.objects.values_list("hit_id", flat=True))
    assert Publication.objects.get(round=round).status == Publication.Status.PUBLISHED


def test_mturk_without_credentials_is_not_configured_and_not_retried(mturk_fake, round_factory, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(ProviderNotConfigured):
        MTurkProvider(retry_pause=0).balance()
    assert not mturk_fake.calls()


@pytest.mark.parametrize("encoded", ["[" * 100_000 + "]" * 100_000, '{"choice": "\\ud800"}'],
                         ids=["nested-100000-deep", "lone-surrogate"])
def test_hostile_answers_listed_by_mturk_are_kept_undecoded_instead_of_stopping_the_sync(encoded):
    """A worker can hand MTurk any text; json.loads raised RecursionError (deep) or kept a lone surrogate."""
    from providers.mturk.provider import ANSWERS_FIELD, decode_answers

    assert decode_answers({ANSWERS_FIELD: encoded}) == {ANSWERS_FIELD: encoded}
    assert decode_answers({ANSWERS_FIELD: '{"choice": "left"}'}) == {"choice": "left"}
