"""IRR ranking rounds go to speakers of the round's language only."""
import pytest
from django.core.exceptions import ValidationError

from annotation.errors import NotQualified
from annotation.services.engine import request_assignment
from tests.annotation.factories import make_review_set, make_round, make_worker

pytestmark = pytest.mark.django_db


def test_language_matched_round_serves_only_workers_who_list_its_language():
    round = make_round(task_type="ranking", targets=[make_review_set(language="ja")], workers_per_item=3,
                       language="ja", qualification_rules={"language_matched": True})
    english_only, unstated, bilingual = make_worker(), make_worker(), make_worker()
    english_only.languages = ["en"]
    english_only.save()
    bilingual.languages = ["en", "ja"]
    bilingual.save()
    for worker in (english_only, unstated):
        with pytest.raises(NotQualified, match="for workers who work in Japanese"):
            request_assignment(round=round, worker=worker)
    assert request_assignment(round=round, worker=bilingual) is not None


def test_without_the_rule_anyone_may_rank():
    round = make_round(task_type="ranking", targets=[make_review_set(language="ja")], language="ja")
    assert request_assignment(round=round, worker=make_worker()) is not None


def test_rule_and_languages_are_validated():
    with pytest.raises(ValidationError, match="language_matched must be true or false"):
        make_round(task_type="ranking", targets=[make_review_set()], qualification_rules={"language_matched": "yes"})
    worker = make_worker()
    worker.languages = ["english"]
    with pytest.raises(ValidationError, match="list of codes"):
        worker.full_clean()
