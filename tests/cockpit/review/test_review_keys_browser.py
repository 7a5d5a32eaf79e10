"""The review queue in a real browser: tick every submission, tick a range with Shift-click, the
keyboard shortcuts (never while typing), the filters by model and choice, the export links."""
from __future__ import annotations

import pytest

from annotation.models import Assignment

from ..conftest import PASSWORD
from .test_filters_and_export import battle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def open_queue(page, researcher, project, query=""):
    page.goto(f"/accounts/login/?next=/projects/{project.slug}/review/{query}")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.press("#id_password", "Enter")
    page.wait_for_url(f"**/projects/{project.slug}/review/**")


def ticked(page):
    return [box.get_attribute("value") for box in page.locator("input[form=bulk-review]:checked").all()]


def test_select_all_and_shift_click_range(page, researcher, project):
    made = [battle(project, ("gpt", "llava"), chosen="gpt") for _ in range(5)]
    ids = [str(a.pk) for a in made]
    open_queue(page, researcher, project)
    page.check("#select-all")
    assert ticked(page) == ids
    page.uncheck("#select-all")
    assert ticked(page) == []
    boxes = page.locator("input[form=bulk-review]")
    boxes.nth(1).click()
    boxes.nth(3).click(modifiers=["Shift"])
    assert ticked(page) == ids[1:4]
    assert page.locator("#select-all").evaluate("box => box.indeterminate")
    boxes.nth(0).click(modifiers=["Shift"])  # from the last ticked (item 4) back to the first
    assert ticked(page) == ids[0:4]
    page.fill("#bulk-feedback", "Good work.")
    page.get_by_role("button", name="Approve ticked").click()
    page.get_by_text("Approved 4 submissions.").wait_for()
    assert sorted(Assignment.objects.filter(review_status="approved").values_list("pk", flat=True)) == \
        sorted(a.pk for a in made[:4])
    assert page.js_errors == []


def test_keyboard_shortcuts_move_tick_approve_and_never_fire_while_typing(page, researcher, project):
    made = [battle(project, ("gpt", "llava"), chosen="gpt") for _ in range(3)]
    open_queue(page, researcher, project)
    assert page.locator("#review-shortcuts").is_visible()
    page.locator("#review-shortcuts summary").click()
    assert page.locator("#review-shortcuts kbd", has_text="j").is_visible()

    page.keyboard.press("j")
    assert page.locator("article.submission.current").get_attribute("id") == f"submission-{made[0].pk}"
    page.keyboard.press("j")
    page.keyboard.press("x")
    assert ticked(page) == [str(made[1].pk)]
    page.keyboard.press("k")
    assert page.locator("article.submission.current").get_attribute("id") == f"submission-{made[0].pk}"

    # Typing in a text box types: no shortcut fires.
    page.locator("#bulk-feedback").fill("")
    page.locator("#bulk-feedback").type("jkxar")
    assert page.locator("#bulk-feedback").input_value() == "jkxar"
    assert ticked(page) == [str(made[1].pk)]
    assert Assignment.objects.filter(review_status="approved").count() == 0

    # r: the current submission's feedback box, to write the rejection.
    page.locator(f"#submission-{made[2].pk}").focus()
    page.keyboard.press("r")
    feedback = page.locator(f"#feedback-{made[2].pk}")
    assert feedback.evaluate("box => box === document.activeElement")
    page.keyboard.type("a careful reason")
    assert feedback.input_value() == "a careful reason"

    # a: approve the current submission.
    page.locator(f"#submission-{made[0].pk}").focus()
    page.keyboard.press("a")
    page.get_by_text("Approved 1 submission.").wait_for()
    assert Assignment.objects.get(pk=made[0].pk).review_status == "approved"
    assert Assignment.objects.filter(review_status="approved").count() == 1
    assert page.js_errors == []


def test_filters_by_model_and_choice_and_model_names_on_the_cards(page, researcher, project):
    gpt_wins = battle(project, ("gpt", "llava"), chosen="gpt")
    llava_wins = battle(project, ("gpt", "llava"), chosen="llava")
    other = battle(project, ("blip", "qwen"), chosen="qwen")
    open_queue(page, researcher, project)
    card = page.locator(f"#submission-{other.pk}")
    assert sorted(card.locator(".model-name").all_inner_texts()) == ["blip", "qwen"]

    page.select_option("#id_model", "gpt")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**model=gpt**")
    shown = {a.get_attribute("id") for a in page.locator("article.submission").all()}
    assert shown == {f"submission-{gpt_wins.pk}", f"submission-{llava_wins.pk}"}

    page.select_option("#id_choice", "llava")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**choice=llava**")
    shown = {a.get_attribute("id") for a in page.locator("article.submission").all()}
    assert shown == {f"submission-{llava_wins.pk}"}
    assert page.locator("#id_model").input_value() == "gpt"  # the filters are kept
    href = page.locator("#export-csv").get_attribute("href")
    assert "model=gpt" in href and "choice=llava" in href
    assert page.js_errors == []
