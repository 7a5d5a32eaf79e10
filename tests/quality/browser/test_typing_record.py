"""The caption page records paste events and typing time and sends them with the answers."""
import pytest

from annotation.models import Assignment
from tests.annotation.browser.conftest import log_in
from tests.annotation.factories import make_instance, make_round, make_worker_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASTED = "A lighthouse on a rocky coast at sunset."


def test_a_pasted_caption_is_recorded_and_flagged(page):
    instance = make_instance(images=1, captions=False, stored_images=True)
    round = make_round(task_type="caption", targets=[instance])
    user = make_worker_user()
    log_in(page, user.username)
    page.click(f"text={round.name}")
    page.wait_for_selector("#task-form[data-ready=true]")
    box = page.get_by_label("Caption of image 1")
    box.click()
    page.keyboard.type("Waves ", delay=40)
    # A paste as the browser delivers it: the event with the clipboard text, then the text inserted.
    box.evaluate("""(el, text) => {
        const data = new DataTransfer();
        data.setData("text", text);
        el.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true}));
        el.setRangeText(text, el.selectionStart, el.selectionEnd, "end");
        el.dispatchEvent(new Event("input", {bubbles: true}));
    }""", PASTED)
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector("#no-task")
    assignment = Assignment.objects.get(round=round)
    stats = assignment.input_stats
    assert stats["pastes"] == 1 and stats["pasted_chars"] == len(PASTED)
    assert stats["typing_seconds"] > 0
    assert assignment.payload["captions"] == ["Waves " + PASTED]
    assert assignment.flags == [{"kind": "pasted", "pasted_chars": len(PASTED), "written_chars": len("Waves " + PASTED)}]
    assert page.js_errors == []
