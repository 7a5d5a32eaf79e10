"""The MTurk worker page inside an iframe of another origin, as on MTurk's site: the worker does the
task, the page saves on our server with its token (no cookies), then posts to externalSubmit. Only
the sites of MTURK_FRAME_ANCESTORS may frame it; chromium refuses any other."""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote

import pytest

from annotation.models import Assignment
from providers import services
from providers.mturk.models import HIT
from providers.mturk.provider import MTurkProvider
from tests.annotation.browser.conftest import browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class TurkSite:
    """Another origin standing in for MTurk's worker site: frames the task and takes externalSubmit."""

    def __init__(self):
        self.submissions: list[dict] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                src = parse_qs(self.path.split("?", 1)[1])["src"][0]
                body = (f'<!doctype html><title>HIT</title><iframe id="hit" src="{src}" width="1000" height="800">'
                        "</iframe>").encode()
                self._answer(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length).decode()
                if not self.path.startswith("/mturk/externalSubmit"):
                    # Not MTurk's API: the save's confirmation lookup ends here and waits for a sync.
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                fields = parse_qs(body)
                site.submissions.append({key: values[0] for key, values in fields.items()})
                self._answer(b"<!doctype html><p id='thanks'>HIT submitted</p>")

            def _answer(self, body: bytes):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def choose_right_and_submit(self, browser, task_url: str) -> list[str]:
        """As a worker on MTurk: open the HIT framing ``task_url``, pick the right-hand response,
        submit, and wait for the post to externalSubmit. Returns the page's script errors."""
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{self.url}/hit?src={quote(task_url, safe='')}")
        frame = page.frame_locator("#hit")
        frame.locator("#task-form[data-ready=true]").wait_for()
        frame.locator("label[for=choice-right]").click()
        frame.locator("#submit-button").click()
        frame.locator("#thanks").wait_for()
        context.close()
        for _ in range(50):
            if self.submissions:
                break
            time.sleep(0.1)
        return errors


def test_framed_task_saves_here_then_posts_to_external_submit(
    browser, live_server, mturk_fake, round_factory, settings,  # noqa: F811
):
    round = round_factory(items=1, workers_per_item=1)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hit = HIT.objects.get()
    assignment_id = mturk_fake.accept_assignment(hit.hit_id, "AFRAMED1")
    with TurkSite() as turk:
        settings.MTURK_ENDPOINT_URL = turk.url  # the configured endpoint is an allowed turkSubmitTo
        settings.MTURK_FRAME_ANCESTORS = [turk.url]  # standing for MTurk's worker sites
        task = (f"{live_server.url}/work/mturk/{round.pk}/?assignmentId={assignment_id}&hitId={hit.hit_id}"
                f"&workerId=AFRAMED1&turkSubmitTo={quote(turk.url, safe='')}")
        errors = turk.choose_right_and_submit(browser, task)
    assert errors == []
    assert len(turk.submissions) == 1
    assert turk.submissions[0]["assignmentId"] == assignment_id
    assert turk.submissions[0]["crowdbench_answers"] == '{"choice":"right"}'
    assignment = Assignment.objects.get()
    assert assignment.status == "submitted" and assignment.payload == {"choice": "right"}


def test_a_site_other_than_mturks_cannot_frame_the_task_page(
    browser, live_server, mturk_fake, round_factory, settings, csp_violations,  # noqa: F811
):
    round = round_factory(items=1, workers_per_item=1)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hit = HIT.objects.get()
    assignment_id = mturk_fake.accept_assignment(hit.hit_id, "AFRAMED2")
    with TurkSite() as turk, TurkSite() as elsewhere:
        settings.MTURK_ENDPOINT_URL = turk.url
        settings.MTURK_FRAME_ANCESTORS = [turk.url]
        task = (f"{live_server.url}/work/mturk/{round.pk}/?assignmentId={assignment_id}&hitId={hit.hit_id}"
                f"&workerId=AFRAMED2&turkSubmitTo={quote(turk.url, safe='')}")
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(15_000)
        with page.expect_response(lambda response: response.url.startswith(live_server.url)) as framed:
            page.goto(f"{elsewhere.url}/hit?src={quote(task, safe='')}")
        assert framed.value.status == 200  # our server answered; chromium would not show the page
        page.wait_for_load_state("load")
        for _ in range(50):
            if csp_violations:
                break
            page.wait_for_timeout(100)
        frame = page.frame_locator("#hit")
        assert frame.locator("#task-form").count() == 0
        context.close()
    assert len(csp_violations) == 1 and "frame-ancestors" in csp_violations[0], csp_violations
    assert f"frame-ancestors {turk.url}" in csp_violations[0]
    csp_violations.clear()  # the refusal this test expects
