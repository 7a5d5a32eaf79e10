"""In chromium: the first-steps checklist on a new project's board, and the data browser: ids copied
from the keyboard, filters, pages, a row's history, an edit, a delete that asks first, and a refusal
(the row was used meanwhile) with its way back. Every page visited is audited by axe-core."""
import pytest
from playwright.sync_api import expect

from datasets_app.models import Instance, ModelOutput
from tests.annotation.factories import make_family, make_instance, make_outputs, make_round

from .conftest import log_in_researcher

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_new_boards_checklist_ticks_as_data_comes_and_links_to_its_pages(page, researcher, project):
    log_in_researcher(page, researcher.username, f"/projects/{project.slug}/")
    checklist = page.locator("#first-steps")
    expect(checklist.locator("#first-steps-count")).to_have_text("0 of 12 done.")
    expect(page.locator("#first-steps-list")).to_have_attribute("open", "")
    expect(checklist.locator("li[data-step='material']")).to_have_class("todo")
    checklist.get_by_role("link", name="Import instances or add instruction families with their images").click()
    page.wait_for_url(f"**/projects/{project.slug}/#upload-families")
    expect(page.locator("#upload-families")).to_be_visible()

    make_outputs(instance=make_instance(family=make_family(project=project)))
    page.goto(f"/projects/{project.slug}/")
    expect(checklist.locator("#first-steps-count")).to_have_text("2 of 12 done.")
    expect(checklist.locator("li[data-step='material']")).to_have_class("done")
    expect(checklist.locator("li[data-step='model-outputs']")).to_have_class("done")
    expect(checklist.locator("li[data-step='caption-round']")).to_have_class("todo")
    checklist.get_by_role("link", name="Open a caption round").click()
    page.wait_for_url("**/rounds/new/?kind=caption:awaiting_caption")
    # The builder's id field sends the researcher to the browser to find the ids.
    expect(page.locator("#browse-instance_ids a")).to_have_attribute("href", f"/projects/{project.slug}/data/instances/")
    assert page.js_errors == []


def test_browse_filter_page_copy_ids_and_read_a_rows_history(page, researcher, project, live_server):
    family = make_family(project=project, name="Counting")
    made = [make_instance(family=family, instruction=f"How many things in picture {n}?") for n in range(55)]
    Instance.objects.filter(pk=made[0].pk).update(status=Instance.Status.VERIFIED)
    outputs = make_outputs(instance=made[1])
    round = make_round(task_type="pairwise", targets=[tuple(outputs)], project=project)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    log_in_researcher(page, researcher.username, f"/projects/{project.slug}/")
    page.locator(".project-nav").get_by_role("link", name="Data").click()
    page.wait_for_url(f"**/projects/{project.slug}/data/families/")
    row = page.locator(f"tr[data-id='{family.pk}']")
    expect(row.locator("td.coverage")).to_contain_text("1 / 10")

    # An id is copied from the keyboard, and the copy is announced.
    row.locator("button.copy-id").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#copy-status")).to_have_text(f"Copied: {family.pk}")
    assert page.evaluate("navigator.clipboard.readText()") == str(family.pk)

    page.locator("nav.tabs").get_by_role("link", name="Instances").click()
    page.wait_for_url("**/data/instances/")
    expect(page.locator("#data-count")).to_contain_text("55 rows")
    expect(page.locator("table.data-rows tbody tr")).to_have_count(50)
    page.get_by_role("link", name="Next").click()
    page.wait_for_url("**/data/instances/?page=2")
    expect(page.locator("table.data-rows tbody tr")).to_have_count(5)
    page.select_option("#id_stage", "verified")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/data/instances/?*stage=verified*")
    expect(page.locator("table.data-rows tbody tr")).to_have_count(1)
    expect(page.locator(f"tr[data-id='{made[0].pk}'] td.stage")).to_have_text("Verified")
    page.fill("#id_q", "picture 1?")
    page.select_option("#id_stage", "")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/data/instances/?*q=picture*")
    expect(page.locator("table.data-rows tbody tr")).to_have_count(1)

    # The instance in a round: its history names the round; editing and deleting are closed.
    page.locator(f"tr[data-id='{made[1].pk}'] a").click()
    page.wait_for_url(f"**/data/instances/{made[1].pk}/")
    expect(page.locator(f".history-item[data-round='{round.pk}']")).to_contain_text(round.name)
    expect(page.locator("#used-because")).to_contain_text("work item")
    expect(page.locator("#edit-form")).to_have_count(0)
    assert page.js_errors == []


def test_edit_and_delete_an_unused_row_and_a_refusal_leads_back(page, researcher, project):
    family = make_family(project=project)
    instance = make_instance(family=family, instruction="How many cats?")
    output, _ = make_outputs(instance=make_instance(family=family))
    log_in_researcher(page, researcher.username, f"/projects/{project.slug}/data/instances/{instance.pk}/")
    page.fill("#id_instruction", "How many dogs?")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/data/instances/{instance.pk}/")
    expect(page.locator("ul.messages")).to_contain_text(f"Instance {instance.pk} saved.")
    instance.refresh_from_db()
    assert instance.instruction == "How many dogs?"

    # A blank instruction is refused on the form, the input kept.
    page.fill("#id_instruction", "   ")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#edit-form [role='alert']")).to_contain_text("Instruction is empty.")

    # Deleting asks first; dismissed, nothing is sent.
    page.goto(f"/projects/{project.slug}/data/outputs/{output.pk}/")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Delete this model output").click()
    assert ModelOutput.objects.filter(pk=output.pk).exists()
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.get_by_role("button", name="Delete this model output").click()
    expect(page.locator("ul.messages")).to_contain_text(f"Model output {output.pk} deleted.")
    assert not ModelOutput.objects.filter(pk=output.pk).exists()

    # The instance goes into a round while its page is open: the edit is refused, nothing changes.
    page.goto(f"/projects/{project.slug}/data/instances/{instance.pk}/")
    make_round(task_type="caption", targets=[instance], project=project)
    page.fill("#id_instruction", "How many birds?")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#refusal")).to_contain_text("1 work item refers to it")
    page.locator("#back-link").click()
    page.wait_for_url(f"**/data/instances/{instance.pk}/")
    expect(page.locator("#used-because")).to_be_visible()
    instance.refresh_from_db()
    assert instance.instruction == "How many dogs?"
    assert page.js_errors == []


def test_every_list_and_row_page_reads_well(page, researcher, project):
    """Each list and each kind of row page, with data, as an owner sees them (each audited by axe-core)."""
    from tests.annotation.factories import make_review_set

    family = make_family(project=project, name="Counting")
    instance = make_instance(family=family)
    output, _ = make_outputs(instance=instance)
    review_set = make_review_set(project=project, texts=[f"<em>Review</em> {n}" for n in range(5)])
    image = instance.ordered_images()[0]
    log_in_researcher(page, researcher.username, f"/projects/{project.slug}/data/families/")
    rows = {"families": family, "instances": instance, "images": image, "review-sets": review_set, "outputs": output}
    for kind, row in rows.items():
        page.goto(f"/projects/{project.slug}/data/{kind}/")
        expect(page.locator(f"tr[data-id='{row.pk}']")).to_be_visible()
        page.locator(f"tr[data-id='{row.pk}'] a").first.click()
        page.wait_for_url(f"**/data/{kind}/{row.pk}/")
        expect(page.locator("h1 code.row-id")).to_have_text(str(row.pk))
    # The review set's texts are shown as text.
    page.goto(f"/projects/{project.slug}/data/review-sets/{review_set.pk}/")
    expect(page.locator("ol.reviews li").first).to_contain_text("<em>Review</em> 0")
    expect(page.locator("ul.data-images img")).to_have_attribute("alt", f"Image {review_set.image_id}")
    page.goto(f"/projects/{project.slug}/data/images/{image.pk}/")
    expect(page.locator("ul.holders")).to_contain_text(f"instance {instance.pk}")
    expect(page.locator("#image-use")).to_have_text(
        "Not used by a round directly; shown by 1 instance, of which none is used.")
    assert page.js_errors == []


def test_a_search_that_matches_nothing_and_a_bad_filter_stay_on_the_list(page, researcher, project):
    family = make_family(project=project, name="Counting")
    make_instance(family=family, instruction="How many cats?")
    log_in_researcher(page, researcher.username, f"/projects/{project.slug}/data/instances/")
    page.fill("#id_q", "zzzz")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/data/instances/?*q=zzzz*")
    expect(page.locator("#data-empty")).to_contain_text("Nothing matches this search or these filters.")
    page.locator("#clear-filters").click()
    page.wait_for_url("**/data/instances/")
    expect(page.locator("table.data-rows tbody tr")).to_have_count(1)

    # A target below 1 (an address typed or kept; the field itself asks for 1 or more) is shown at its
    # field, on the list page, the value kept.
    response = page.goto(f"/projects/{project.slug}/data/families/?target=-5")
    assert response.status == 400
    expect(page.locator("#id_target_error")).to_have_text("Ensure this value is greater than or equal to 1.")
    expect(page.locator("#id_target")).to_have_value("-5")
    expect(page.locator("#id_target")).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".project-nav")).to_be_visible()
    page.fill("#id_target", "2")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/data/families/?*target=2*")
    expect(page.locator(f"tr[data-id='{family.pk}'] td.coverage")).to_contain_text("0 / 2")
    assert page.js_errors == []
