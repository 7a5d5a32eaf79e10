"""A local worker completes one task of each type in chromium; worker text stays inert."""
import re

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment
from annotation.task_types.ranking import shown_order
from datasets_app.models import Caption, Instance, Source, Verification

from ..factories import (
    make_candidate,
    make_family,
    make_instance,
    make_outputs,
    make_review_set,
    make_round,
    make_worker_user,
    png_bytes,
)
from .conftest import images_loaded, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS_INSTRUCTION = (
    'Count the shapes <script>window.__pwned = "script"</script>'
    '<img src="nowhere.png" onerror="window.__pwned = \'onerror\'">'
)


def open_round(page, round, username):
    log_in(page, username)
    page.click(f"text={round.name}")
    page.wait_for_selector("#task-form[data-ready=true]")


def wait_until_stored(page):
    """After a submit the page loads the next task; these rounds have one item, so none is left."""
    page.wait_for_selector("#no-task")


def assert_inert(page):
    assert page.evaluate("window.__pwned") is None
    assert page.locator(".instruction-text").first.text_content() == XSS_INSTRUCTION
    assert page.locator(".instruction-box script").count() == 0
    assert page.locator(".instruction-box img").count() == 0


def test_instruction_generation_with_an_uploaded_image(page, tmp_path):
    family = make_family(name="Shape questions", stored_images=True)
    round = make_round(task_type="instruction_generation", targets=[family])
    user = make_worker_user()
    open_round(page, round, user.username)
    assert page.locator(".seed-instruction").text_content() == family.seed_instruction
    assert images_loaded(page.locator(".images img"))
    assert page.locator("#task-timer").text_content() != "--:--"
    image_file = tmp_path / "my-photo.png"
    image_file.write_bytes(png_bytes("green", size=(80, 60)))

    page.get_by_label("Your new instruction").fill("Which shape is green?")
    page.get_by_label("Upload an image file").set_input_files(str(image_file))
    page.get_by_label("License of the image").select_option("CC-BY-4.0")
    page.get_by_label("Creator of the image").fill("Test Photographer")
    page.get_by_label("Page where you found the image").fill("https://openverse.org/image/xyz")
    page.get_by_role("button", name="Submit").click()
    wait_until_stored(page)

    instance = Instance.objects.get(instruction="Which shape is green?")
    assert (instance.source, instance.status, instance.created_by) == (
        Source.CROWD, Instance.Status.AWAITING_CAPTION, user,
    )
    image = instance.ordered_images()[0]
    assert (image.width, image.height, image.license) == (80, 60, "CC-BY-4.0")
    assert page.js_errors == []


def fill_image_row(row, *, license, creator, source_url, file=None, url=None):
    if file is not None:
        row.get_by_label("Upload an image file").set_input_files(str(file))
    if url is not None:
        row.get_by_label("Web address (URL) of the image").fill(url)
    row.get_by_label("License of the image").select_option(license)
    row.get_by_label("Creator of the image").fill(creator)
    row.get_by_label("Page where you found the image").fill(source_url)


def test_instruction_generation_with_several_images_added_and_removed(page, tmp_path):
    family = make_family(name="Before and after", multi=True, stored_images=True)
    round = make_round(task_type="instruction_generation", targets=[family])
    user = make_worker_user()
    open_round(page, round, user.username)
    rows = page.locator("#image-rows > fieldset")
    assert rows.count() == 2
    remove_first = page.get_by_role("button", name="Remove image 1")
    assert remove_first.is_disabled()  # two images are the fewest for this family
    before_file = tmp_path / "before.png"
    before_file.write_bytes(png_bytes("blue", size=(90, 70)))

    page.get_by_label("Your new instruction").fill("What was added to the room?")
    fill_image_row(page.get_by_role("group", name="Image 1"), file=before_file, license="CC-BY-4.0",
                   creator="First Photographer", source_url="https://openverse.org/image/before")
    page.get_by_role("button", name="Add another image").click()
    assert rows.count() == 3 and not remove_first.is_disabled()
    fill_image_row(page.get_by_role("group", name="Image 3"), url="https://images.example.org/after.jpg",
                   license="CC0-1.0", creator="Second <b>Photographer</b>", source_url="https://openverse.org/image/after")
    # The empty second row goes; the third becomes image 2 and is submitted as images-1-….
    page.get_by_role("button", name="Remove image 2").click()
    assert rows.count() == 2
    assert page.get_by_role("group", name="Image 2").get_by_label("Web address (URL) of the image").input_value() == (
        "https://images.example.org/after.jpg"
    )
    assert page.locator("#images-1-url").input_value() == "https://images.example.org/after.jpg"
    assert page.locator("#images-2-url").count() == 0
    assert page.get_by_role("button", name="Remove image 1").is_disabled()

    page.get_by_role("button", name="Submit").click()
    wait_until_stored(page)

    instance = Instance.objects.get(instruction="What was added to the room?")
    assert (instance.source, instance.status, instance.created_by) == (
        Source.CROWD, Instance.Status.AWAITING_CAPTION, user,
    )
    first, second = instance.ordered_images()
    assert (first.width, first.height, first.license, first.creator) == (90, 70, "CC-BY-4.0", "First Photographer")
    assert (second.url, second.license, second.creator) == (
        "https://images.example.org/after.jpg", "CC0-1.0", "Second <b>Photographer</b>",
    )
    assert page.js_errors == []


def test_a_multi_image_refusal_names_the_image(page):
    round = make_round(task_type="instruction_generation", targets=[make_family(multi=True, stored_images=True)])
    open_round(page, round, make_worker_user().username)
    page.get_by_label("Your new instruction").fill("Which is newer?")
    fill_image_row(page.get_by_role("group", name="Image 1"), url="https://images.example.org/a.jpg",
                   license="CC-BY-4.0", creator="Someone", source_url="https://openverse.org/image/a")
    fill_image_row(page.get_by_role("group", name="Image 2"), license="CC-BY-4.0", creator="Someone",
                   source_url="https://openverse.org/image/b")
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#task-status")).to_have_text(re.compile(r"^Image 2:"), timeout=15_000)
    assert not Instance.objects.filter(instruction="Which is newer?").exists()
    assert page.js_errors == []


def test_caption_task_shows_a_hostile_instruction_inert_and_stores_one_caption_per_image(page):
    instance = make_instance(instruction=XSS_INSTRUCTION, images=2, captions=False, stored_images=True)
    round = make_round(task_type="caption", targets=[instance])
    user = make_worker_user()
    open_round(page, round, user.username)
    assert_inert(page)
    assert images_loaded(page.locator(".images img"))

    # An empty caption is refused with a message, and nothing is stored.
    page.get_by_label("Caption of image 1").fill("A red circle on the left.")
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#task-status")).to_contain_text("is empty", timeout=15_000)
    assert not Caption.objects.filter(instance=instance).exists()

    page.get_by_label("Caption of image 2").fill("A blue <b>square</b> on the right.")
    page.get_by_role("button", name="Submit").click()
    wait_until_stored(page)
    texts = list(Caption.objects.filter(instance=instance).order_by("position").values_list("text", flat=True))
    assert texts == ["A red circle on the left.", "A blue <b>square</b> on the right."]
    assert page.evaluate("window.__pwned") is None
    assert page.js_errors == []


def test_verification_task_shows_hostile_texts_inert(page):
    instance = make_instance(instruction=XSS_INSTRUCTION, stored_images=True)
    Caption.objects.filter(instance=instance).update(text='<img src=x onerror="window.__pwned = 1">caption')
    candidate = make_candidate(instance=instance, text="<script>window.__pwned = 'answer'</script>Three shapes.")
    round = make_round(task_type="verification", targets=[candidate])
    user = make_worker_user()
    open_round(page, round, user.username)
    assert_inert(page)
    assert page.locator(".answer-text").text_content() == candidate.text
    assert page.locator(".caption-text").first.text_content().startswith("<img src=x")

    page.get_by_label("Incorrect: the answer is wrong although the caption is fine").check()
    page.get_by_label("The answer contains offensive").check()
    page.get_by_label("Comment (optional)").fill("The count is wrong.")
    page.get_by_role("button", name="Submit").click()
    wait_until_stored(page)
    verification = Verification.objects.get(candidate=candidate, is_aggregate=False)
    assert (verification.outcome, verification.harmful, verification.comment, verification.source) == (
        "response_problem", True, "The count is wrong.", Source.CROWD,
    )
    assert page.evaluate("window.__pwned") is None


def test_pairwise_with_the_keyboard_only(page):
    instance = make_instance(stored_images=True)
    output_x, output_y = make_outputs(instance=instance, models=("model-x", "model-y"))
    round = make_round(task_type="pairwise", targets=[(output_x, output_y)])
    user = make_worker_user()
    open_round(page, round, user.username)
    assignment = Assignment.objects.get(round=round)
    right_side = assignment.presentation["right"]
    right_text = {"a": output_x.text, "b": output_y.text}[right_side]
    assert page.locator("#response-right").text_content() == right_text

    page.keyboard.press("1")
    assert page.locator("#choice-left").is_checked()
    page.keyboard.press("ArrowRight")
    assert page.locator("#choice-right").is_checked()
    page.keyboard.press("Enter")
    wait_until_stored(page)
    assignment.refresh_from_db()
    assert assignment.payload == {"choice": "right"}
    assert assignment.result == {"winner": right_side}
    assert page.js_errors == []


def _tab_to_first_review(page):
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('ranking-item')"):
            return
    raise AssertionError("Tab never reached a review")


def _shown_order(page) -> list[int]:
    return [int(v) for v in page.locator("#ranking-list .ranking-item").evaluate_all(
        "items => items.map(item => item.dataset.reviewId)")]


def stored_in_page_ids(assignment) -> list[int]:
    """The stored ranking (review ids) as the page named the reviews."""
    return shown_order(assignment, assignment.payload["order"])


def test_ranking_in_japanese_with_the_keyboard_only(page):
    texts = ["白い背景に三つの図形。", "楽しい構図です。", "四つの四角形があります。", "醜い絵です。", "紫の円が素敵です。"]
    review_set = make_review_set(language="ja", stored_images=True, texts=texts)
    round = make_round(task_type="ranking", targets=[review_set], language="ja")
    user = make_worker_user()
    open_round(page, round, user.username)
    assert page.locator("html").get_attribute("lang") == "ja"
    assert page.get_by_role("button", name="送信").is_visible()
    assert "作業説明" in page.locator(".instructions summary").text_content()

    shown = _shown_order(page)
    _tab_to_first_review(page)
    page.keyboard.press("ArrowDown")  # first review -> second place
    page.keyboard.press("ArrowDown")  # -> third place
    expected = [shown[1], shown[2], shown[0], shown[3], shown[4]]
    assert _shown_order(page) == expected
    assert page.locator("#ranking-list .ranking-item").nth(2).evaluate("item => item === document.activeElement")
    assert "3" in page.locator("#task-status").text_content()
    page.keyboard.press("Enter")
    wait_until_stored(page)
    assert "ありがとうございました" in page.locator("#no-task").text_content()
    assert stored_in_page_ids(Assignment.objects.get(round=round)) == expected


def test_ranking_by_drag_and_drop_and_buttons(page):
    review_set = make_review_set(language="en", stored_images=True)
    round = make_round(task_type="ranking", targets=[review_set])
    user = make_worker_user()
    # Tall enough that the whole list is in view: a drag must not scroll the page under the pointer.
    page.set_viewport_size({"width": 1100, "height": 1800})
    open_round(page, round, user.username)
    shown = _shown_order(page)
    items = page.locator("#ranking-list .ranking-item")
    last_box = items.nth(4).bounding_box()
    # Dropping on the lower half of the last review puts the dragged one after it.
    items.nth(0).drag_to(items.nth(4), target_position={"x": 20, "y": last_box["height"] - 4})
    after_drag = _shown_order(page)
    assert after_drag == shown[1:] + shown[:1]
    page.locator("#ranking-list .ranking-item").nth(4).get_by_role("button", name="Move up").click()
    expected = after_drag[:3] + [after_drag[4], after_drag[3]]
    assert _shown_order(page) == expected
    assert [t.strip() for t in page.locator(".rank-number").all_text_contents()] == ["1", "2", "3", "4", "5"]
    page.get_by_role("button", name="Submit").click()
    wait_until_stored(page)
    assert stored_in_page_ids(Assignment.objects.get(round=round)) == expected


def test_mobile_viewport_keeps_the_page_usable(browser, live_server, served_media):
    instance = make_instance(stored_images=True)
    round = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=instance))])
    user = make_worker_user()
    context = browser.new_context(base_url=live_server.url, viewport={"width": 375, "height": 740}, has_touch=True)
    page = context.new_page()
    try:
        open_round(page, round, user.username)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"page scrolls sideways on a phone ({width}px)"
        left = page.locator("label[for=choice-left]").bounding_box()
        right = page.locator("label[for=choice-right]").bounding_box()
        assert right["y"] > left["y"] + left["height"] - 1, "responses should stack on a narrow screen"
        page.locator("label[for=choice-left]").tap()
        page.get_by_role("button", name="Submit").tap()
        page.wait_for_selector("#no-task")
        assert re.search(r"You have done 1 task in this round\.", page.content())
    finally:
        context.close()


def test_skipping_a_task_gives_it_back_and_shows_the_next(page):
    candidates = [
        make_candidate(instance=make_instance(stored_images=True), text=f"Answer number {n}.") for n in (1, 2)
    ]
    round = make_round(task_type="verification", targets=candidates)
    user = make_worker_user()
    open_round(page, round, user.username)
    first = Assignment.objects.get(round=round)
    assert page.locator(".answer-text").text_content() == first.item.candidate.text
    posted = []
    page.on("request", lambda request: request.method == "POST" and posted.append(request.url))
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.get_by_role("button", name="Skip this task").click()
    page.wait_for_selector("#task-form[data-ready=true]")
    assert page.locator(".answer-text").text_content() != first.item.candidate.text
    first.refresh_from_db()
    assert first.status == Assignment.Status.RETURNED
    # Giving a task back is not working on it: the skip did not start it first.
    assert [url.split("/api/work/")[-1] for url in posted] == [f"assignments/{first.pk}/return/"]
    assert first.in_preview
    second = Assignment.objects.get(round=round, status=Assignment.Status.ASSIGNED)
    assert second.item_id != first.item_id
