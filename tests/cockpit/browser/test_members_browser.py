"""In chromium: removing a member asks first; removing the last owner is said on the members page;
each of the page's two forms has labels that focus its own fields."""
import pytest
from playwright.sync_api import expect

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


def test_each_forms_labels_focus_its_own_fields(page, researcher, project):
    log_in_researcher(page, researcher.username)
    page.goto(f"/projects/{project.slug}/members/")
    invite = page.locator("#invite-form")
    invite.get_by_text("User name").click()
    expect(invite.locator("input[name=username]")).to_be_focused()
    invite.get_by_text("Role").click()
    expect(invite.locator("select[name=role]")).to_be_focused()
    page.locator("form.stack").first.get_by_text("Username").click()
    expect(page.locator("form.stack").first.locator("input[name=username]")).to_be_focused()
    assert page.js_errors == []
