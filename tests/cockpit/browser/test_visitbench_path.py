"""Issue #31's acceptance test: the whole VisIT-Bench path run through the cockpit and the worker pages
in chromium, in one project. A researcher creates the project, uploads two instruction families,
builds and launches an instruction round and a caption round, generates the references on the board
(the local fake OpenAI-compatible server answers), finds the verification round among the project's
rounds, uploads two models' predictions, builds and launches a pairwise round and makes a release;
local workers do every task at /work/. Then every round, item, assignment, verification, judgment,
image, instance and family of the path belongs to that project, and the release holds the crowd's
verifications and pays every round, the verification round included.

Only pages act; the database is read for the final checks, and the LLM is configured through
settings as a researcher's set-up would."""
from __future__ import annotations

import csv
import io
from collections import Counter
import json
import re

import pytest
from django.db.models import Q
from playwright.sync_api import expect

from annotation.models import Assignment, CollectionRound, WorkItem
from datasets_app.models import (
    AcceptedReference,
    Caption,
    Image,
    Instance,
    InstructionFamily,
    ModelOutput,
    ReferenceCandidate,
    Source,
    Verification,
)
from evaluation.models import JudgedBattle
from evaluation.selectors import human_battles
from projects.models import Project, Release
from tests.annotation.factories import make_worker_user, png_bytes

from ..board.conftest import MODEL, fake_server, llm_settings  # noqa: F401  (fixtures)
from ..conftest import PASSWORD
from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORKER_PASSWORD = "work-pass-123"
SLUG = "visit-path"
# The families' seed images are known by URL only; the browser gets a small PNG for them (no network).
SEED_IMAGES = "https://images.example.org/"
FAMILIES = [
    {"name": "Counting", "description": "How many things are there?", "multi_image": False,
     "seed_instruction": "How many apples are on the table?", "seed_response": "There are three apples.",
     "seed_image_urls": [f"{SEED_IMAGES}apples.png"], "license": "CC-BY-4.0"},
    {"name": "Colours", "description": "Which colour is it?", "multi_image": False,
     "seed_instruction": "What colour is the car?", "seed_response": "The car is red.",
     "seed_image_urls": [f"{SEED_IMAGES}car.png"], "license": "CC0-1.0"},
]
MODELS = ("alpha-vlm", "beta-vlm")


def serve_seed_images(context) -> None:
    context.route(f"{SEED_IMAGES}**", lambda route: route.fulfill(body=png_bytes("orange"), content_type="image/png"))


def round_id_of(page) -> int:
    return int(re.search(r"/rounds/(\d+)/$", page.url).group(1))


def build_and_launch(page, *, kind: str, name: str, workers: int, items: int, source=None) -> int:
    """A round built with the round builder from the project's rounds page, previewed, created and
    opened locally; its id (from its page's address)."""
    page.get_by_role("link", name="Rounds", exact=True).click()
    page.click("#new-round")
    page.click(f'a[data-kind="{kind}"]')
    for field, value in (source or {}).items():
        page.select_option(field, value) if field.endswith("sampler") else page.fill(field, value)
    page.fill("#id_round-name", name)
    page.fill("#id_round-workers_per_item", str(workers))
    page.fill("#id_round-reward_per_task", "0.40")
    page.click("#preview-button")
    assert page.inner_text("#plan-summary").startswith(f"{items} item"), page.inner_text("#plan-summary")
    page.click("#create-button")
    page.wait_for_url(re.compile(r".*/rounds/\d+/$"))
    page.click("#round-open")
    page.wait_for_selector("#round-pause")
    expect(page.locator("#round-status")).to_have_text("Open")
    return round_id_of(page)


def work(browser, live_server, username: str, round_id: int, answer) -> int:
    """A local worker logs in, picks the round on /work/ and answers tasks (``answer(page, n)`` fills
    the n-th form) until none is left for them; how many were done."""
    context = browser.new_context(base_url=live_server.url)
    serve_seed_images(context)
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    done = 0
    try:
        log_in(page, username, WORKER_PASSWORD, "/work/")
        page.click(f'li.round-card[data-round-id="{round_id}"] a')
        while True:
            page.wait_for_selector("#task-form[data-ready=true], #no-task")
            if page.locator("#no-task").count():
                break
            answer(page, done)
            with page.expect_navigation():
                page.get_by_role("button", name="Submit").click()
            done += 1
        assert errors == []
    finally:
        context.close()
    return done


def download(page, link) -> bytes:
    """A file the page links to, fetched with the researcher's session."""
    response = page.request.get(link.get_attribute("href"))
    assert response.ok, (link.get_attribute("href"), response.status)
    return response.body()


def pay_table(card: str) -> list[list[str]]:
    """The rows of the dataset card's "Pay" table (round, task, submitted, …)."""
    lines = card.split("### Pay", 1)[1].strip().splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_whole_visitbench_path_in_the_cockpit_stays_in_one_project_and_its_release_holds_the_verifications(
        page, browser, live_server, researcher, llm_settings, tmp_path):
    llm_settings.RELEASES_ROOT = tmp_path / "releases"
    serve_seed_images(page.context)
    workers = [make_worker_user(f"crowd{n}", WORKER_PASSWORD) for n in range(3)]

    # 1. The project, made in the browser.
    log_in(page, researcher.username, PASSWORD, "/projects/")
    page.get_by_role("link", name="New project").click()
    page.fill("#id_name", "VisIT path")
    page.fill("#id_slug", SLUG)
    page.get_by_role("button", name="Create project").click()
    page.wait_for_url(f"**/projects/{SLUG}/")

    # 2. Two instruction families with their seed examples, uploaded on the board.
    families = "".join(json.dumps(family) + "\n" for family in FAMILIES)
    page.set_input_files("#id_families-file", files=[
        {"name": "families.jsonl", "mimeType": "application/jsonl", "buffer": families.encode()}])
    page.locator("#upload-families button").click()
    expect(page.locator("ul.messages")).to_contain_text("families.jsonl: 2 families created")

    # 3. The instruction round: one new instruction per family, each with an image the worker uploads.
    instruction_round = build_and_launch(page, kind="instruction_generation:families", name="Write instructions",
                                         workers=1, items=2)
    photos = []
    for number, colour in enumerate(("green", "blue")):
        photo = tmp_path / f"photo-{number}.png"
        photo.write_bytes(png_bytes(colour, size=(80 + number, 60)))
        photos.append(photo)

    def write_instruction(page, n):
        page.get_by_label("Your new instruction").fill(f"What is drawn in the {('green', 'blue')[n]} picture?")
        page.get_by_label("Upload an image file").set_input_files(str(photos[n]))
        page.get_by_label("License of the image").select_option("CC-BY-4.0")
        page.get_by_label("Creator of the image").fill(f"Photographer {n}")
        page.get_by_label("Page where you found the image").fill(f"https://openverse.org/image/{n}")

    assert work(browser, live_server, workers[0].username, instruction_round, write_instruction) == 2

    # 4. The caption round over the instances the crowd wrote.
    page.get_by_role("link", name="Dashboard", exact=True).click()
    expect(page.locator("tr[data-stage='awaiting_caption'] .count")).to_have_text("2")
    caption_round = build_and_launch(page, kind="caption:awaiting_caption", name="Caption the images",
                                     workers=1, items=2)
    assert work(browser, live_server, workers[2].username, caption_round,
                lambda page, _n: page.get_by_label("Caption of image 1").fill("A plain square, drawn flat.")) == 2

    # 5. References generated on the board by the LLM (the fake server), each routed to a verification round.
    page.get_by_role("link", name="Dashboard", exact=True).click()
    expect(page.locator("tr[data-stage='awaiting_reference'] .count")).to_have_text("2")
    page.locator("tr[data-stage='awaiting_reference'] a.button", has_text="generate").click()
    page.select_option("#id_generate_references-run-model", MODEL)
    page.fill("#id_generate_references-run-budget_usd", "0.50")
    page.get_by_role("button", name="Start: generate").click()
    page.wait_for_url(re.compile(r".*/board/runs/\d+/$"))
    expect(page.locator("#run-status")).to_have_text("succeeded")
    summary = page.inner_text("#run-summary")
    verification_round = int(re.search(r"verification items added: round (\d+): 2 items", summary).group(1))

    # 6. The verification round is one of the project's rounds: listed, with its page, open.
    page.get_by_role("link", name="Rounds", exact=True).click()
    listed = page.locator("table.data tbody tr").filter(has=page.locator("td", has_text=re.compile(r"^verification$")))
    assert listed.count() == 1, (
        f"the verification round {verification_round} made by 'Generate references' is not among the "
        f"project's rounds: {page.locator('table.data tbody').inner_text()!r}")
    with page.expect_navigation():
        listed.get_by_role("link").first.click()
    assert round_id_of(page) == verification_round
    expect(page.locator("#round-status")).to_have_text("Open")
    expect(page.locator("#round-items tbody tr")).to_have_count(2)
    # Three workers per item, the verification type's default (docs/pipeline.md).
    expect(page.locator("#round-settings tr", has_text="Workers per item").locator("td")).to_have_text("3")

    # 7. Three workers verify both candidates: two say correct, one finds a problem in the response.
    def verify(worker: int):
        label = ("Correct" if worker < 2 else "Incorrect: the answer is wrong although the caption is fine")
        return lambda page, _n: page.get_by_label(label, exact=True).check()

    done = [work(browser, live_server, workers[n].username, verification_round, verify(n)) for n in range(3)]
    assert done == [2, 2, 2]
    page.get_by_role("link", name="Dashboard", exact=True).click()
    expect(page.locator("tr[data-stage='verified'] .count")).to_have_text("2")

    # 8. Two models' predictions for the test set, from the file the leaderboard page offers to fill in.
    page.get_by_role("link", name="Leaderboard submissions", exact=True).click()
    template = list(csv.DictReader(io.StringIO(download(page, page.locator("#template-link")).decode())))
    assert len(template) == 2
    predictions = io.StringIO()
    writer = csv.writer(predictions)
    writer.writerow(["instance_id", "instruction", *(f"{model} prediction" for model in MODELS)])
    for row in template:
        writer.writerow([row["instance_id"], row["instruction"], "A square.", "A plain coloured square, drawn flat."])
    page.get_by_role("link", name="Dashboard", exact=True).click()
    page.set_input_files("#id_predictions-file", files=[
        {"name": "predictions.csv", "mimeType": "text/csv", "buffer": predictions.getvalue().encode()}])
    page.locator("#upload-predictions button").click()
    expect(page.locator("ul.messages")).to_contain_text("predictions.csv: 2 rows, 2 matched to instances")

    # 9. The pairwise round: the two models on both instances, judged by a worker.
    pairwise_round = build_and_launch(page, kind="pairwise:model_outputs", name="Which answer is better",
                                      workers=1, items=2, source={"#id_source-sampler": "all_pairs"})
    assert work(browser, live_server, workers[0].username, pairwise_round,
                lambda page, _n: page.keyboard.press("1")) == 2

    # 10. The release, made and read on the releases page.
    page.get_by_role("link", name="Releases", exact=True).click()
    page.fill("#id_name", "visit-path")
    page.fill("#id_version", "1.0.0")
    page.get_by_role("button", name="Make release").click()
    expect(page.locator("ul.messages")).to_contain_text("Release visit-path 1.0.0 made.")
    page.locator("section.release details summary").click()  # the list of files
    files = page.locator("section.release table.files")
    released_verifications = [json.loads(line) for line in download(
        page, files.get_by_role("link", name="data/verifications.jsonl", exact=True)).decode().splitlines()]
    card = download(page, files.get_by_role("link", name="README.md", exact=True)).decode()
    assert page.js_errors == []

    # Everything of the path belongs to the project; nothing has no project.
    project = Project.objects.get(slug=SLUG)
    rounds = CollectionRound.objects.order_by("pk")
    assert [(r.pk, r.task_type, r.project_id) for r in rounds] == [
        (instruction_round, "instruction_generation", project.pk), (caption_round, "caption", project.pk),
        (verification_round, "verification", project.pk), (pairwise_round, "pairwise", project.pk)]
    assert not WorkItem.objects.exclude(round__project=project).exists()
    assert not Assignment.objects.exclude(round__project=project).exists()
    assert Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() == 2 + 2 + 6 + 2
    assert list(InstructionFamily.objects.values_list("name", "project")) == sorted(
        (family["name"], project.pk) for family in FAMILIES)
    instances = Instance.objects.filter(family__project=project)
    assert Instance.objects.count() == 2 and set(instances.values_list("status", flat=True)) == {"verified"}
    for model in (Caption, ReferenceCandidate, AcceptedReference, ModelOutput, JudgedBattle):
        assert not model.objects.exclude(instance__family__project=project).exists(), model.__name__
    verifications = Verification.objects.filter(candidate__instance__family__project=project)
    assert Verification.objects.count() == verifications.count() == 6 + 2  # the crowd's and the verdicts
    assert Image.objects.count() == 4 and not Image.objects.exclude(
        Q(instance_links__instance__family__project=project) | Q(seed_for_families__project=project)).exists()
    assert len(human_battles(project=project)) == len(human_battles()) == 2

    # The release holds the crowd's verifications of the verified instances, worker ids as pseudonyms.
    release = Release.objects.get(project=project)
    assert release.counts["verifications"] == 6
    crowd = Verification.objects.filter(is_aggregate=False, source=Source.CROWD)
    assert sorted((row["instance_id"], row["outcome"], row["harmful"]) for row in released_verifications) == sorted(
        crowd.values_list("candidate__instance_id", "outcome", "harmful"))
    assert {row["instance_id"] for row in released_verifications} == set(instances.values_list("pk", flat=True))
    per_worker = Counter(row["worker"] for row in released_verifications)
    assert sorted(per_worker.values()) == [2, 2, 2] and all(name.startswith("w_") for name in per_worker)
    # The card pays every round, the verification round included.
    submitted = {instruction_round: "2", caption_round: "2", verification_round: "6", pairwise_round: "2"}
    assert sorted(row[:3] for row in pay_table(card)) == sorted(
        [r.name, r.task_type, submitted[r.pk]] for r in rounds)
