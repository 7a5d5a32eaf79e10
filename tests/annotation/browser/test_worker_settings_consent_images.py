"""In chromium: a worker states Japanese and the Japanese ranking round appears; the study information
comes before the first task; a broken image becomes a placeholder whose report is stored."""
import pytest
from playwright.sync_api import expect

from annotation.models import ConsentDecision, ImageReport
from datasets_app.models import Image

from ..factories import make_instance, make_outputs, make_review_set, make_round, make_worker_user
from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_worker_sets_japanese_and_the_japanese_ranking_round_appears(page):
    english = make_round(task_type="ranking", targets=[make_review_set(language="en", stored_images=True)])
    japanese = make_round(task_type="ranking", targets=[make_review_set(language="ja", stored_images=True)],
                          language="ja", workers_per_item=3, qualification_rules={"language_matched": True})
    user = make_worker_user()
    log_in(page, user.username)
    assert page.locator(".round-card", has_text=english.name).is_visible()
    assert page.locator(".round-card", has_text=japanese.name).count() == 0
    page.click("#settings-link")
    page.check("input[name=languages][value=ja]")
    page.click("#languages-form button[type=submit]")
    page.wait_for_url("**/work/")
    card = page.locator(".round-card", has_text=japanese.name)
    assert card.is_visible()
    assert "0.50 USD per task" in card.text_content()
    card.locator("a").click()
    page.wait_for_selector("#task-form[data-ready=true]")
    assert page.locator("html").get_attribute("lang") == "ja"
    assert page.js_errors == []


def test_study_information_is_shown_and_accepted_before_the_first_task(page):
    targets = [tuple(make_outputs(instance=make_instance(stored_images=True)))]
    round = make_round(task_type="pairwise", targets=targets,
                       consent_text="About this study: you compare two answers.\n\n<i>You may stop at any time.</i>")
    user = make_worker_user()
    log_in(page, user.username)
    page.click(f"text={round.name}")
    page.wait_for_url(f"**/work/rounds/{round.pk}/consent/")
    assert page.locator("#task-form").count() == 0
    text = page.locator("#consent-text")
    assert "you compare two answers." in text.text_content()
    assert "<i>You may stop at any time.</i>" in text.text_content()  # shown as text, not markup
    assert text.locator("i").count() == 0 and text.locator("p").count() == 2
    page.click("#consent-accept")
    page.wait_for_selector("#task-form[data-ready=true]")
    decision = ConsentDecision.objects.get()
    assert decision.accepted and decision.worker.user == user
    assert page.js_errors == []


def test_broken_image_shows_a_placeholder_with_its_link_and_the_report_is_stored(page, live_server):
    instance = make_instance()
    broken_url = f"{live_server.url}/media/missing/broken-picture.png"
    Image.objects.filter(pk=instance.ordered_images()[0].pk).update(url=broken_url)
    round = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=instance))])
    user = make_worker_user()
    log_in(page, user.username)
    page.click(f"text={round.name}")
    page.wait_for_selector("#task-form[data-ready=true]")
    placeholder = page.locator(".image-placeholder")
    placeholder.wait_for()
    assert "could not be loaded" in placeholder.text_content()
    link = placeholder.locator("a.image-placeholder-link")
    assert link.get_attribute("href") == broken_url and link.text_content() == broken_url
    assert page.locator(".images img").first.is_hidden()
    placeholder.locator(".image-report-button").click()
    expect(page.locator(".image-report-status").first).to_contain_text("reported", timeout=15_000)
    report = ImageReport.objects.get()
    assert report.image_url == broken_url and report.worker.user == user and report.item.round == round
    # The button is spent; a repeated report from the page (a second tab, say) stores nothing new.
    assert placeholder.locator(".image-report-button").is_disabled()
    status = page.evaluate(
        """async (address) => {
            const config = document.getElementById("image-report");
            const response = await fetch(config.dataset.url, {method: "POST", headers: {
                "Content-Type": "application/json",
                "X-CSRFToken": document.querySelector("input[name=csrfmiddlewaretoken]").value},
                body: JSON.stringify({image_url: address})});
            return response.status;
        }""", broken_url)
    assert status == 200
    assert ImageReport.objects.count() == 1
    assert page.js_errors == []
