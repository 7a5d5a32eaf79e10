"""In chromium: removing a member asks first; removing the last owner is said on the members page."""
import pytest

from projects.models import Membership

from .conftest import log_in_researcher

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_remove_asks_and_the_last_owner_stays_with_a_message(page, researcher, project):
    log_in_researcher(page, researcher.username)
    page.goto(f"/projects/{project.slug}/members/")
    asked = []

    def answer(dialog, accept):
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    page.get_by_role("button", name="Remove").click()
    assert asked == [f"Remove {researcher.username} from this project?"]
    assert page.locator(".messages").count() == 0  # dismissed: nothing was sent

    page.once("dialog", lambda dialog: answer(dialog, True))
    with page.expect_navigation():
        page.get_by_role("button", name="Remove").click()
    assert "needs at least one owner" in page.locator(".messages").inner_text()
    assert page.url.endswith(f"/projects/{project.slug}/members/")
    assert Membership.objects.filter(project=project, user=researcher).exists()
    assert page.js_errors == []
