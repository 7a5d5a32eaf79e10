"""Issue #27's acceptance test: from `make demo`'s data (the demo loader) with no LLM configured, one
instance goes from instruction writing to a released, verified instance with a judged leaderboard,
through pages only: the demo's workers do the crowd steps at /work/, the researcher runs rounds, LLM
steps and the release in the cockpit, and every LLM step runs on the embedded model (SmolLM2-135M).

Only pages act. The database is read to learn the ids the round builder asks for (the demo family,
the new instance) and for the final checks."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from datasets_app.models import Instance, InstructionFamily, ModelOutput, ReferenceCandidate
from evaluation.models import JudgedBattle
from llm import embedded
from llm.models import LLMCall
from projects.models import Release
from tests.annotation.factories import png_bytes

from .conftest import log_in
from .test_visitbench_path import round_id_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("smollm2")]

SLUG = "demo"
LLM_STEP_TIMEOUT = 600_000  # ms: CPU generation on a shared machine; the first call also loads the model
EMBEDDED = embedded.EMBEDDED_MODEL


def demo_logins() -> dict[str, str]:
    """Loads the demo as `make demo` does and returns the logins it prints. The loader runs in a
    thread of its own, as from a shell: its LLM step calls the model through ``async_to_sync``, which
    refuses the thread where Playwright's event loop runs."""
    out = StringIO()
    with ThreadPoolExecutor(max_workers=1) as loader:
        loader.submit(call_command, "load_demo", stdout=out).result()
    text = out.getvalue()
    assert re.search(r"LLM step: Generate references .* succeeded", text), text
    return dict(re.findall(r"login (\w+) / (\S+)", text))


def build_and_launch(page, *, kind: str, name: str, items: int, fields: dict) -> int:
    page.get_by_role("link", name="Rounds", exact=True).click()
    page.click("#new-round")
    page.click(f'a[data-kind="{kind}"]')
    for field, value in fields.items():
        page.fill(field, value)
    page.fill("#id_round-name", name)
    page.fill("#id_round-workers_per_item", "1")
    page.fill("#id_round-reward_per_task", "0.40")
    page.click("#preview-button")
    assert page.inner_text("#plan-summary").startswith(f"{items} item"), page.inner_text("#plan-summary")
    page.click("#create-button")
    page.wait_for_url(re.compile(r".*/rounds/\d+/$"))
    page.click("#round-open")
    page.wait_for_selector("#round-pause")
    return round_id_of(page)


def work_one(browser, live_server, username: str, password: str, round_id: int, answer, *, wait=15_000) -> None:
    """A demo worker logs in, picks the round on /work/ and does one task."""
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        log_in(page, username, password, "/work/")
        page.click(f'li.round-card[data-round-id="{round_id}"] a')
        page.wait_for_selector("#task-form[data-ready=true]")
        answer(page)
        with page.expect_navigation(timeout=wait):
            page.get_by_role("button", name="Submit").click()
        assert errors == []
    finally:
        context.close()


def run_on_board(page, kind: str, *, fill=None) -> str:
    """Starts an LLM step from the board's form with the (only) model offered; its run's summary."""
    page.get_by_role("link", name="Dashboard", exact=True).click()
    form = page.locator(f"#start-{kind}")
    form.locator("summary").click()
    expect(form.locator(f"#id_{kind}-run-model")).to_have_value(EMBEDDED)
    form.locator(f"#id_{kind}-run-budget_usd").fill("0.10")
    if fill:
        fill(form)
    with page.expect_navigation(timeout=LLM_STEP_TIMEOUT):
        form.locator("button[type=submit]").click(no_wait_after=True)
    expect(page.locator("#run-status")).to_have_text("succeeded")
    return page.inner_text("#run-summary")


def test_from_the_demo_one_instance_is_written_verified_judged_and_released_on_the_embedded_model(
        page, browser, live_server, settings, tmp_path):
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_PRICES, settings.LLM_EMBEDDED = {}, True
    settings.LLM_EMBEDDED_MAX_TOKENS = 16  # short answers: the CPU time stays reasonable
    settings.RELEASES_ROOT = tmp_path / "releases"
    logins = demo_logins()
    workers = ["worker1", "worker2", "worker3"]
    family = InstructionFamily.objects.get(project__slug=SLUG, name="Shape questions")
    verified_before = set(Instance.objects.filter(status=Instance.Status.VERIFIED).values_list("pk", flat=True))

    log_in(page, "researcher", logins["researcher"], f"/projects/{SLUG}/")
    # The LLM models page says what answers: the embedded model, nothing configured.
    page.get_by_role("link", name="LLM models", exact=True).click()
    expect(page.locator("table.llm-models")).to_contain_text(EMBEDDED)

    # 1. An instruction round over one demo family; a demo worker writes one instruction with an image.
    instruction_round = build_and_launch(page, kind="instruction_generation:families", name="New instruction",
                                         items=1, fields={"#id_source-family_ids": str(family.pk)})
    photo = tmp_path / "photo.png"
    photo.write_bytes(png_bytes("green", size=(90, 60)))

    def write_instruction(page):
        page.get_by_label("Your new instruction").fill("What colour is the picture?")
        page.get_by_label("Upload an image file").set_input_files(str(photo))
        page.get_by_label("License of the image").select_option("CC-BY-4.0")
        page.get_by_label("Creator of the image").fill("A demo photographer")
        page.get_by_label("Page where you found the image").fill("https://openverse.org/image/demo")

    work_one(browser, live_server, workers[0], logins[workers[0]], instruction_round, write_instruction)
    instance = Instance.objects.get(family=family, instruction="What colour is the picture?")
    assert instance.status == Instance.Status.AWAITING_CAPTION

    # 2. A caption round for that instance; a demo worker captions it.
    caption_round = build_and_launch(page, kind="caption:awaiting_caption", name="Caption it", items=1,
                                     fields={"#id_source-instance_ids": str(instance.pk)})
    work_one(browser, live_server, workers[1], logins[workers[1]], caption_round,
             lambda page: page.get_by_label("Caption of image 1").fill("A plain green rectangle."))

    # 3. The reference candidate, written by the embedded model from the board.
    summary = run_on_board(page, "generate_references")
    verification_round = int(re.search(r"verification items added: round (\d+): 1 item", summary).group(1))
    candidate = ReferenceCandidate.objects.get(instance=instance)
    assert candidate.model_name == EMBEDDED and candidate.text.strip()

    # 4. The demo's three workers verify it.
    for worker in workers:
        work_one(browser, live_server, worker, logins[worker], verification_round,
                 lambda page: page.get_by_label("Correct", exact=True).check())
    instance.refresh_from_db()
    assert instance.status == Instance.Status.VERIFIED

    # 5. Model outputs by the embedded model for the verified instances, then the LLM judge (also the
    # embedded model): against one of the demo's models, and each against the reference.
    run_on_board(page, "generate_outputs", fill=lambda form: form.locator("#id_generate_outputs-output_name").fill("smollm2"))
    assert ModelOutput.objects.filter(instance=instance, model_name="smollm2").exists()

    def judge_two(form):
        for box in form.locator("input[name='judge_outputs-models']").all():
            box.set_checked(box.get_attribute("value") in ("smollm2", "llava-demo"))
        # Each model also against the verified reference: the new instance has no demo model's output.
        form.locator("#id_judge_outputs-reference").select_option("against")

    run_on_board(page, "judge_outputs", fill=judge_two)
    battles = JudgedBattle.objects.filter(judge_model=EMBEDDED)
    assert battles.filter(instance=instance).exists()

    # 6. The judged leaderboard on the results page.
    # The results are stored; with no task broker (as in the demo) the judgments just made wait for
    # "Recompute now".
    page.goto(f"/projects/{SLUG}/results/?source=judge")
    expect(page.locator("#results-waiting")).to_be_visible()
    page.locator("#recompute-results").click()
    page.goto(f"/projects/{SLUG}/results/?source=judge")
    expect(page.locator("#results-waiting")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("smollm2")
    expect(page.locator("main")).to_contain_text("llava-demo")

    # 7. The release.
    page.get_by_role("link", name="Releases", exact=True).click()
    page.fill("#id_name", "demo-embedded")
    page.fill("#id_version", "1.0.0")
    page.get_by_role("button", name="Make release").click()
    expect(page.locator("ul.messages")).to_contain_text("Release demo-embedded 1.0.0 made.")
    assert page.js_errors == []

    release = Release.objects.get(project__slug=SLUG)
    assert release.counts["instances"] == len(verified_before) + 1, release.counts
    # Every LLM call of the path went to the embedded model, at no cost.
    calls = LLMCall.objects.all()
    assert calls.exists() and set(calls.values_list("model", flat=True)) == {EMBEDDED}
    assert all(cost == 0 for cost in calls.values_list("cost_usd", flat=True))
