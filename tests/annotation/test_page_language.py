"""A worker chooses the language of crowdbench's pages on their settings page: every worker page,
refusal and message then speaks it, on any round and any device; the round's content keeps its own
language. Without a choice, the round's language when the worker works in it (``annotation.languages``)."""
import re

import pytest
from django.urls import reverse

from annotation.models import Worker
from annotation.services.workers import get_or_create_local_worker

from .factories import make_candidate, make_round, make_worker_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def bilingual(client):
    user = make_worker_user()
    get_or_create_local_worker(user=user)
    client.force_login(user)
    return user


def save_settings(client, **data):
    return client.post(reverse("annotation:settings"), data)


def test_a_bilingual_worker_who_chooses_japanese_reads_an_english_rounds_page_in_japanese(client, bilingual):
    """Fails where a worker who works in English and Japanese read an English round's page, and its
    navigation, in English with no way to choose."""
    round = make_round(task_type="verification", targets=[make_candidate()], language="en")
    response = save_settings(client, languages=["en", "ja"], page_language="ja")
    assert response.status_code == 302
    worker = Worker.objects.get(user=bilingual)
    assert worker.languages == ["en", "ja"] and worker.page_language == "ja"

    work_list = client.get(reverse("annotation:work-list")).content.decode()
    assert '<html lang="ja">' in work_list and "言語を保存しました" in work_list
    page = client.get(reverse("annotation:round", args=[round.pk])).content.decode()
    assert '<html lang="ja">' in page and "送信" in page  # "Submit"
    settings_page = client.get(reverse("annotation:settings")).content.decode()
    assert re.search(r'<input[^>]*name="page_language"[^>]*value="ja"[^>]*checked', settings_page), settings_page


def test_without_a_choice_the_page_follows_the_round_the_worker_works_in(client, bilingual):
    round = make_round(task_type="verification", targets=[make_candidate()], language="en")
    assert save_settings(client, languages=["en", "ja"], page_language="").status_code == 302
    page = client.get(reverse("annotation:round", args=[round.pk])).content.decode()
    assert '<html lang="en">' in page and ">Submit<" in page


def test_an_unknown_page_language_is_refused_and_changes_nothing(client, bilingual):
    response = save_settings(client, languages=["ja"], page_language="xx")
    assert response.status_code == 400
    worker = Worker.objects.get(user=bilingual)
    assert worker.languages == [] and worker.page_language == ""
