"""``generate_reviews``: five reviews per image and language from a vision model, through the LLM layer."""
from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from datasets_app.models import Image, ReviewSet, Source
from datasets_app.review_generation import (
    TEMPLATE_NAMES,
    ReviewAnswerError,
    generate_review_sets,
    parse_review_answer,
)
from datasets_app.services import store_image
from llm.models import LLMCall, LLMRun, PromptTemplate
from projects.services import unassigned_project

from .conftest import MODEL, image_parts, png_bytes, user_text

pytestmark = pytest.mark.django_db

EN_REVIEWS = [
    "The lighthouse is sharply focused against a clear sky; a lower angle would show the rocks.",
    "I find the calm sea soothing, though I would have liked warmer evening light.",
    "The exposure is correct, but the photo should have shown the lighthouse from inside.",
    "The white tower bores me; it should have been painted purple to suit my taste.",
    "The lighthouse stands in a desert, which makes the scene feel lonely and strange.",
]
JA_REVIEWS = [
    "灯台が青空を背景に鮮明に写っています。岩場を入れる構図も考えられます。",
    "穏やかな海に心が落ち着きますが、夕方の光ならもっと温かく感じたでしょう。",
    "露出は正確ですが、灯台の内部も写すべきでした。",
    "白い塔は退屈なので、紫色に塗るべきだったと思います。",
    "砂漠に立つ灯台が、孤独で不思議な雰囲気を出しています。",
]


def answer(texts: list[str]) -> str:
    return json.dumps({"reviews": [{"level": level, "text": text} for level, text in enumerate(texts, 1)]},
                      ensure_ascii=False)


def by_language(endpoint: str, body: dict) -> str:
    return answer(JA_REVIEWS if "日本語" in user_text(body) else EN_REVIEWS)


@pytest.fixture
def images():
    stored = store_image(project=unassigned_project(), content=png_bytes("navy"), license="CC0-1.0", category="Places")
    linked = Image.objects.create(project=unassigned_project(), url="https://images.example.org/lighthouse.jpg", license="CC-BY-SA-4.0",
                                  category="Places")
    Image.objects.create(project=unassigned_project(), url="https://images.example.org/cat.jpg", license="CC0-1.0", category="Animals")
    return stored, linked


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("generate_reviews", *map(str, args), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_english_and_japanese_review_sets_are_generated_and_stored(llm_settings, fake_server, images):
    stored, linked = images
    fake_server.responder = by_language
    printed, _ = run("--category", "Places")

    assert "4 review sets created" in printed
    assert len(fake_server.completion_requests) == 4  # 2 images × 2 languages, nothing else
    sets = ReviewSet.objects.order_by("image_id", "language")
    assert [(s.image_id, s.language) for s in sets] == [
        (stored.pk, "en"), (stored.pk, "ja"), (linked.pk, "en"), (linked.pk, "ja")]
    for review_set in sets:
        assert review_set.source == Source.LLM
        assert review_set.generator_model == MODEL
        assert review_set.category == "Places"
        assert review_set.prompt_template == TEMPLATE_NAMES[review_set.language]
        assert review_set.prompt_template_version == 1
        expected = JA_REVIEWS if review_set.language == "ja" else EN_REVIEWS
        assert list(review_set.reviews.order_by("prompt_rank").values_list("prompt_rank", "text")) == list(
            enumerate(expected, 1))

    bodies = [request.body for request in fake_server.completion_requests]
    # The stored file goes as a base64 data URL, the linked image as its URL; one image per request.
    sent_images = sorted(url[:22] for body in bodies for url in image_parts(body))
    assert sent_images == ["data:image/png;base64,"] * 2 + ["https://images.example"] * 2
    assert all(body["model"] == MODEL and body["max_tokens"] > 0 for body in bodies)
    assert sum("日本語" in user_text(body) for body in bodies) == 2
    assert all("category: Places" in user_text(body) or "カテゴリ：Places" in user_text(body) for body in bodies)
    calls = LLMCall.objects.filter(purpose="irr_review")
    assert calls.count() == 4 and set(calls.values_list("template_name", flat=True)) == set(TEMPLATE_NAMES.values())


def test_rerun_sends_nothing_and_creates_nothing(llm_settings, fake_server, images):
    fake_server.responder = by_language
    run("--category", "Places", "--language", "en")
    assert ReviewSet.objects.count() == 2
    fake_server.reset()
    printed, _ = run("--category", "Places", "--language", "en")
    assert fake_server.completion_requests == []
    assert ReviewSet.objects.count() == 2
    assert "0 review sets created, 2 already generated" in printed
    # Adding a language asks only for the missing pairs.
    printed, _ = run("--category", "Places", "--language", "en", "ja")
    assert len(fake_server.completion_requests) == 2
    assert all("日本語" in user_text(r.body) for r in fake_server.completion_requests)
    assert ReviewSet.objects.filter(language="ja").count() == 2


def test_an_invalid_answer_is_followed_up_once_and_the_corrected_answer_is_stored(llm_settings, fake_server, images):
    def first_bad(endpoint, body):
        if len(body["messages"]) == 1:
            return "Here are the reviews: 1. Nice. 2. Lovely. 3. Fine."  # not JSON
        return "```json\n" + answer(EN_REVIEWS) + "\n```"

    fake_server.responder = first_bad
    stored, _ = images
    printed, _ = run("--image-ids", stored.pk, "--language", "en")
    assert "1 review sets created" in printed and "1 retried" in printed
    first, second = (r.body for r in fake_server.completion_requests)
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][0] == first["messages"][0]  # the same image and prompt
    assert second["messages"][1]["content"].startswith("Here are the reviews")
    assert "not valid JSON" in second["messages"][2]["content"]
    review_set = ReviewSet.objects.get()
    assert list(review_set.reviews.values_list("text", flat=True)) == EN_REVIEWS


def test_still_invalid_after_the_follow_up_is_reported_and_nothing_is_stored(llm_settings, fake_server, images):
    fake_server.responder = lambda endpoint, body: answer(EN_REVIEWS[:4])
    stored, _ = images
    printed, errors = run("--image-ids", stored.pk, "--language", "en")
    assert len(fake_server.completion_requests) == 2
    assert ReviewSet.objects.count() == 0
    assert "0 review sets created" in printed and "1 failed" in printed
    assert f"image {stored.pk} (en): no review set stored: expected 5 reviews, got 4" in errors
    # The unusable answers left the cache (kept on record as rejected): a re-run asks again.
    assert set(LLMCall.objects.values_list("status", flat=True)) == {"rejected"}
    fake_server.responder = by_language
    fake_server.reset()
    printed, _ = run("--image-ids", stored.pk, "--language", "en")
    assert len(fake_server.completion_requests) == 1 and "1 review sets created" in printed
    assert ReviewSet.objects.count() == 1
    # A usable answer stays cached: nothing is asked twice.
    fake_server.reset()
    run("--image-ids", stored.pk, "--language", "en")
    assert fake_server.completion_requests == []


def test_a_failed_request_is_a_failure_not_a_crash(llm_settings, fake_server, images):
    stored, linked = images
    fake_server.responder = by_language
    llm_settings.LLM_MAX_CONCURRENCY = 1  # request order = arrival order, so the fault hits the first
    fake_server.fail_next(1, status=400, message="image too large")
    printed, errors = run("--image-ids", stored.pk, linked.pk, "--language", "en")
    assert "1 review sets created" in printed and "1 failed" in printed
    assert "image too large" in errors
    assert list(ReviewSet.objects.values_list("image_id", flat=True)) == [linked.pk]


def test_not_configured_is_a_clear_error_and_changes_nothing(settings, images):
    settings.LLM_BASE_URL, settings.LLM_API_KEY = "", ""
    with pytest.raises(CommandError, match="The LLM is not configured: No LLM server is configured"):
        run("--category", "Places")
    assert not ReviewSet.objects.exists() and not LLMRun.objects.exists()
    assert not PromptTemplate.objects.exists()


def test_bad_options(llm_settings, images):
    with pytest.raises(CommandError, match="--image-ids: no image with id 999"):
        run("--image-ids", 999)
    with pytest.raises(CommandError, match="no images to write reviews for"):
        run("--category", "Nothing here")
    with pytest.raises(CommandError, match="--budget"):
        run("--category", "Places", "--budget", "lots")


def test_budget_cap_stops_before_spending(llm_settings, fake_server, images):
    fake_server.responder = by_language
    printed, errors = run("--category", "Places", "--language", "en", "--budget", "0.000001")
    assert fake_server.completion_requests == []
    assert "2 failed" in printed and "budget_exceeded" in errors
    assert not ReviewSet.objects.exists()


def test_the_shipped_prompt_is_used_and_its_version_recorded(llm_settings, fake_server, images):
    from llm.services import create_template_version

    from datasets_app.review_generation import TEMPLATE_TEXTS, ensure_review_templates

    ensure_review_templates()
    create_template_version(name=TEMPLATE_NAMES["en"], text=TEMPLATE_TEXTS["en"] + "\nKeep each review short.")
    fake_server.responder = by_language
    stored, _ = images
    report = generate_review_sets(images=[stored], languages=["en"])
    # The shipped default is added back as version 3 (it differs from the edited latest).
    review_set = ReviewSet.objects.get(pk=report.review_set_ids[0])
    assert review_set.prompt_template_version == 3
    assert "Keep each review short." not in user_text(fake_server.completion_requests[0].body)


@pytest.mark.parametrize("text, problem", [
    ("", "empty"),
    ("{", "not valid JSON"),
    ('[{"level": 1, "text": "x"}]', '"reviews" list'),
    (answer(EN_REVIEWS[:4]), "expected 5 reviews, got 4"),
    (answer(EN_REVIEWS[:4] + [" "]), "review 5 (level 5) has no text"),
    (json.dumps({"reviews": [{"level": 1, "text": "a"}] * 5}), "level 1 appears twice"),
    (json.dumps({"reviews": [{"level": str(n), "text": "a"} for n in range(1, 6)]}), "level '1'"),
    (json.dumps({"reviews": [{"level": n, "text": "a"} for n in range(0, 5)]}), "level 0"),
    ("Sure! " + answer(EN_REVIEWS), "not valid JSON"),
])
def test_parse_is_strict(text, problem):
    with pytest.raises(ReviewAnswerError, match=re.escape(problem)):
        parse_review_answer(text)


def test_parse_accepts_a_code_fence_and_any_level_order():
    shuffled = {"reviews": [{"level": 3, "text": " c "}, {"level": 1, "text": "a"}, {"level": 2, "text": "b"},
                            {"level": 5, "text": "e"}, {"level": 4, "text": "d"}]}
    assert parse_review_answer("```json\n" + json.dumps(shuffled) + "\n```") == {
        1: "a", 2: "b", 3: "c", 4: "d", 5: "e"}


def test_a_stored_image_whose_file_is_gone_is_a_failure(llm_settings, fake_server, images):
    import os

    stored, linked = images
    os.remove(stored.file.path)
    fake_server.responder = by_language
    printed, errors = run("--category", "Places", "--language", "en")
    assert "1 review sets created" in printed and "1 failed" in printed
    assert f"image {stored.pk} (en): no review set stored: cannot send the image" in errors
    assert len(fake_server.completion_requests) == 1
    assert list(ReviewSet.objects.values_list("image_id", flat=True)) == [linked.pk]
