"""A worker reads crowdbench's text on a round (chrome, refusals, errors) in their own language; the
round's content stays in the round's language (#27)."""
import pytest
from django.test import Client

from annotation.languages import worker_language
from annotation.models import Assignment
from annotation.services.workers import get_or_create_local_worker, set_worker_languages
from tests.annotation.factories import make_instance, make_outputs, make_review_set, make_round, make_worker_user

pytestmark = pytest.mark.django_db


def worker_listing(*languages: str):
    user = make_worker_user()
    worker = set_worker_languages(worker=get_or_create_local_worker(user=user),
                                           languages=list(languages))
    client = Client()
    client.force_login(user)
    return worker, client


def japanese_pairwise_round(**options):
    return make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=make_instance()))], language="ja",
                      **options)


@pytest.mark.parametrize(("listed", "round_language", "expected"), [
    (["en"], "ja", "en"),      # English only: English, whatever the round's language
    (["ja"], "en", "ja"),
    (["en", "ja"], "ja", "ja"),  # the round's language when the worker works in it
    (["ja", "en"], "en", "en"),
    ([], "ja", "ja"),          # nothing stated (a provider's worker before screening): the round's
])
def test_the_worker_language_on_a_round(listed, round_language, expected):
    worker, _ = worker_listing(*listed)
    round = make_round(task_type="ranking", targets=[make_review_set(language=round_language)],
                       language=round_language)
    assert worker_language(worker=worker, round=round) == expected


def test_an_english_only_worker_reads_a_japanese_rounds_refusal_in_english():
    round = japanese_pairwise_round(qualification_rules={"min_approved_tasks": 1})
    _, english = worker_listing("en")
    _, japanese = worker_listing("ja")

    page = english.get(f"/work/rounds/{round.pk}/")
    assert page.status_code == 403
    assert "This round needs 1 approved tasks; you have 0." in page.content.decode()
    assert '<html lang="en">' in page.content.decode()
    api = english.post(f"/api/work/rounds/{round.pk}/next/", content_type="application/json")
    assert api.status_code == 403 and api.json()["detail"] == "This round needs 1 approved tasks; you have 0."

    page = japanese.get(f"/work/rounds/{round.pk}/")
    assert page.status_code == 403
    assert "このラウンドには承認済みタスクが 1 件必要です（あなたは 0 件）。" in page.content.decode()
    assert '<html lang="ja">' in page.content.decode()
    api = japanese.post(f"/api/work/rounds/{round.pk}/next/", content_type="application/json")
    assert api.status_code == 403 and api.json()["detail"] == "このラウンドには承認済みタスクが 1 件必要です（あなたは 0 件）。"


def test_a_language_matched_round_refuses_an_english_only_worker_in_english():
    round = make_round(task_type="ranking", targets=[make_review_set(language="ja")], language="ja",
                       qualification_rules={"language_matched": True})
    _, english = worker_listing("en")
    page = english.get(f"/work/rounds/{round.pk}/")
    assert page.status_code == 403 and "This round is for workers who work in Japanese." in page.content.decode()


def test_task_page_and_submission_errors_follow_the_worker():
    round = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=make_instance()))
                                                      for _ in range(2)], workers_per_item=2, language="ja")
    for listed, time_left, refusal in ((["en"], "Time left", "The choice must be left or right."),
                                       (["ja"], "残り時間", "選択は左か右のどちらかです。")):
        worker, client = worker_listing(*listed)
        page = client.get(f"/work/rounds/{round.pk}/")
        assert page.status_code == 200 and time_left in page.content.decode()
        assignment = Assignment.objects.get(worker=worker)
        answer = client.post(f"/api/work/assignments/{assignment.pk}/submit/", {"choice": "up"},
                             content_type="application/json")
        assert answer.status_code == 400 and refusal in str(answer.json())


def test_a_worker_who_lists_no_language_reads_the_rounds_language_as_before():
    round = japanese_pairwise_round(qualification_rules={"min_approved_tasks": 1})
    _, client = worker_listing()
    page = client.get(f"/work/rounds/{round.pk}/", headers={"Accept-Language": "en"})
    assert "このラウンドには承認済みタスクが 1 件必要です（あなたは 0 件）。" in page.content.decode()
