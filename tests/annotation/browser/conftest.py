"""Playwright (sync API) driving Debian's chromium against pytest-django's live server."""
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe

AXE = Axe()  # axe-core as shipped in the package (no download)

# Playwright's sync API runs an event loop in this thread; the tests still use the ORM synchronously.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# What chromium reported as refused by the pages' Content-Security-Policy, in any context of the
# current test; the autouse fixture ``no_csp_violations`` (tests/conftest.py) fails the test on any.
CSP_VIOLATIONS: list[str] = []


def record_csp_violations(context) -> None:
    """Chromium logs each refusal to the console ("Refused to execute inline script because it
    violates the following Content Security Policy directive: ...")."""

    def on_console(message):
        if "Content Security Policy" in message.text:
            CSP_VIOLATIONS.append(f"{message.text} (at {message.location.get('url', '?')})")

    context.on("console", on_console)


# axe-core's findings of serious or critical impact on the pages the current test reached; the
# autouse fixture ``no_serious_accessibility_violations`` (tests/conftest.py) fails the test on any.
AXE_FINDINGS: list[str] = []
# Every page shape audited in this process (see ``page_shape``) → serious or critical violations found.
AXE_AUDITED: dict[str, int] = {}
AXE_IMPACTS = ("serious", "critical")
_SHAPE_SCRIPT = "[...new Set([...document.querySelectorAll('[name]')].map(e => e.getAttribute('name')))].sort().join(',')"


def page_shape(page) -> str:
    """What makes two visits the same page for an audit: the address with its ids as ``<id>`` and the
    names of the fields it shows (the same worker page holds five kinds of task)."""
    path = re.sub(r"/\d+(?=/|$)", "/<id>", urlsplit(page.url).path)
    return f"{path} [{page.evaluate(_SHAPE_SCRIPT)}]"


# Pages audited: crowdbench's own (the worker pages and the cockpit), served by the test's live
# server (``page`` adds its origin). Not the fakes' pages (a fake MTurk framing ours), nor the pages
# that third-party packages draw: Django's admin, DRF's browsable API and drf-spectacular's Swagger UI.
AUDITED_ORIGINS: set[str] = set()
NOT_AUDITED_PATHS = ("/api/", "/admin/")


def audit_accessibility(page) -> None:
    """Run axe-core once per page shape, in the state the test sees the page in."""
    if page.is_closed():
        return
    url = urlsplit(page.url)
    if f"{url.scheme}://{url.netloc}" not in AUDITED_ORIGINS or url.path.startswith(NOT_AUDITED_PATHS):
        return
    shape = page_shape(page)
    if shape in AXE_AUDITED:
        return
    violations = AXE.run(page).response["violations"]
    serious = [violation for violation in violations if violation["impact"] in AXE_IMPACTS]
    AXE_AUDITED[shape] = len(serious)
    for violation in serious:
        nodes = violation["nodes"]
        AXE_FINDINGS.append(f"{shape}: {violation['id']} ({violation['impact']}) {violation['help']}; "
                            f"{len(nodes)} element(s), first {nodes[0]['target'] if nodes else '?'}")


def audited(page):
    """``page`` audited by axe-core after each ``goto`` and ``wait_for_url`` (where tests arrive at
    pages); the ``page`` fixture also audits the page as the test leaves it."""
    goto, wait_for_url = page.goto, page.wait_for_url

    def audited_goto(*args, **kwargs):
        response = goto(*args, **kwargs)
        audit_accessibility(page)
        return response

    def audited_wait_for_url(*args, **kwargs):
        wait_for_url(*args, **kwargs)
        audit_accessibility(page)

    page.goto, page.wait_for_url = audited_goto, audited_wait_for_url
    return page


def watch_csp(browser) -> None:
    """Every context the tests open on ``browser``, through ``new_context`` or ``new_page``, reports
    its CSP refusals, and every page it opens is audited by axe-core."""
    new_context, new_page = browser.new_context, browser.new_page

    def watched_new_context(*args, **kwargs):
        context = new_context(*args, **kwargs)
        record_csp_violations(context)
        context_new_page = context.new_page
        context.new_page = lambda *a, **k: audited(context_new_page(*a, **k))
        return context

    def watched_new_page(*args, **kwargs):
        page = new_page(*args, **kwargs)
        record_csp_violations(page.context)
        return audited(page)

    browser.new_context, browser.new_page = watched_new_context, watched_new_page


# Module scope: Playwright keeps an event loop running in this thread until it stops, which would
# break later tests that call async_to_sync.
@pytest.fixture(scope="module")
def browser():
    from django.conf import settings
    from playwright.sync_api import sync_playwright

    chromium = Path(settings.CHROMIUM_PATH)
    if not chromium.exists():
        pytest.fail(
            f"chromium not found at {chromium}: install Debian's chromium (apt-get install -y chromium) "
            "or point CHROMIUM_PATH at it"
        )
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
    except Exception:
        playwright.stop()
        raise
    watch_csp(browser)
    yield browser
    browser.close()
    playwright.stop()


@pytest.fixture
def served_media(settings, media_in_tmp):
    """Serve MEDIA_ROOT (a tmp folder) from the live server so uploaded and demo images load."""
    media_in_tmp.mkdir(parents=True, exist_ok=True)
    settings.ROOT_URLCONF = "tests.annotation.browser.urls"
    return media_in_tmp


def _refused_under_csp(*args, **kwargs):
    # The pages' CSP forbids eval, which a string predicate polled in the page needs: the refusal
    # shows up as a page error, but only when the first poll is false, so the test would be flaky.
    raise AssertionError("wait for a locator with expect(...) instead of wait_for_function")


@pytest.fixture
def page(browser, live_server, served_media):
    AUDITED_ORIGINS.add(live_server.url)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors
    page.wait_for_function = _refused_under_csp
    yield page
    if not page.is_closed():
        audit_accessibility(page)  # the state the test ended in, which no navigation may have shown
    context.close()


def log_in(page, username: str, password: str = "work-pass-123", next_url: str = "/work/") -> None:
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.press("#id_password", "Enter")
    page.wait_for_url(f"**{next_url}")


def images_loaded(images) -> bool:
    """Whether every image of the locator ``images`` has loaded and has pixels. Waits (Playwright's
    polling expect, its default timeout) until each has finished loading, since a page's lazily
    loaded images may still be arriving when the element is visible; a broken image then answers
    False."""
    from playwright.sync_api import expect

    count = images.count()
    for index in range(count):
        expect(images.nth(index)).to_have_js_property("complete", True)
    return count > 0 and all(images.evaluate_all("images => images.map(i => i.naturalWidth > 0)"))
