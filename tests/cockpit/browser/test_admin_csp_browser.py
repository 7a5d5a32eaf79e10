"""Django's admin in chromium under the site's Content-Security-Policy: its scripts and styles are
static files, so the sign-in, the index, a list with its filters and actions and a change form load
without a violation (``no_csp_violations`` fails the test on any) and without a script error."""
from __future__ import annotations

import pytest

from tests.cockpit.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_pages_load_under_the_policy(page, researcher):
    researcher.is_staff = researcher.is_superuser = True
    researcher.save()
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.press("#id_password", "Enter")
    page.wait_for_url("**/admin/")
    for url in ("/admin/auth/user/", f"/admin/auth/user/{researcher.pk}/change/", "/admin/projects/project/"):
        response = page.goto(url)
        assert response.status == 200, url
        page.wait_for_load_state("load")
    # The change form's scripts ran: the date and time shortcuts are built by admin's own script.
    page.goto(f"/admin/auth/user/{researcher.pk}/change/")
    page.locator(".datetimeshortcuts").first.wait_for()
    assert page.js_errors == []
