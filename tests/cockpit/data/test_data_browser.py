"""The data browser: every filter, pagination, per-row history, edits and deletes through the data
services (refused with the reason, nothing changed, once the row is used) and who may do what."""
from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.html import escape

from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from datasets_app.models import (
    Caption,
    FamilySeedImage,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ModelOutput,
    ReferenceCandidate,
    ReviewSet,
    Verification,
)
from projects.services import create_project
from tests.annotation.factories import (
    make_family,
    make_image,
    make_instance,
    make_outputs,
    make_review_set,
    make_round,
    make_worker,
)

pytestmark = pytest.mark.django_db


def url(project, kind=None, row=None, action=None):
    if kind is None:
        return reverse("cockpit:data-index", args=[project.slug])
    if row is None:
        return reverse("cockpit:data", args=[project.slug, kind])
    if action is None:
        return reverse("cockpit:data-row", args=[project.slug, kind, row])
    return reverse(f"cockpit:data-{action}", args=[project.slug, kind, row])


@pytest.fixture
def owner(client, researcher):
    client.force_login(researcher)
    return client


def ids(response) -> list[int]:
    return [row.pk for row in response.context["rows"]]


def set_status(instance, status, reason=""):
    # Test set-up: place the instance directly in the stage under test.
    Instance.objects.filter(pk=instance.pk).update(status=status, discard_reason=reason)


# --- lists and filters ----------------------------------------------------------------------------


def test_the_index_opens_the_families_and_the_nav_links_to_it(owner, project):
    response = owner.get(url(project))
    assert response.status_code == 302 and response["Location"] == url(project, "families")
    board = owner.get(reverse("cockpit:project", args=[project.slug])).content.decode()
    assert f'href="{url(project)}"' in board


def test_families_show_coverage_against_the_target_and_search_their_names(owner, project):
    counting = make_family(project=project, name="Counting")
    colours = make_family(project=project, name="Colours")
    for number in range(3):
        instance = make_instance(family=counting)
        if number < 2:
            set_status(instance, Instance.Status.VERIFIED)
    make_instance(family=colours)
    response = owner.get(url(project, "families"), {"target": "2"})
    assert response.status_code == 200
    rows = {row.name: row for row in response.context["rows"]}
    assert (rows["Counting"].instance_count, rows["Counting"].verified_count, rows["Counting"].missing) == (3, 2, 0)
    assert (rows["Colours"].instance_count, rows["Colours"].verified_count, rows["Colours"].missing) == (1, 0, 2)
    page = response.content.decode()
    assert "2 / 2" in page and "0 / 2" in page and "2 missing" in page
    assert owner.get(url(project, "families")).context["target"] == 10
    assert ids(owner.get(url(project, "families"), {"q": "count"})) == [counting.pk]


def test_instances_filter_by_stage_family_and_text(owner, project):
    family, other = make_family(project=project), make_family(project=project)
    waiting = make_instance(family=family, instruction="How many apples?")
    verified = make_instance(family=family, instruction="What colour is the car?")
    set_status(verified, Instance.Status.VERIFIED)
    elsewhere = make_instance(family=other, instruction="How many pears?")
    assert ids(owner.get(url(project, "instances"))) == [waiting.pk, verified.pk, elsewhere.pk]
    assert ids(owner.get(url(project, "instances"), {"stage": "verified"})) == [verified.pk]
    assert ids(owner.get(url(project, "instances"), {"stage": "awaiting_verification"})) == [waiting.pk, elsewhere.pk]
    assert ids(owner.get(url(project, "instances"), {"family": other.pk})) == [elsewhere.pk]
    assert ids(owner.get(url(project, "instances"), {"q": "how many"})) == [waiting.pk, elsewhere.pk]
    assert ids(owner.get(url(project, "instances"), {"q": "how many", "family": family.pk})) == [waiting.pk]


@pytest.mark.parametrize("query, named", [({"stage": "nonsense"}, "stage"), ({"family": "abc"}, "family"),
                                          ({"q": "x" * 201}, "q")])
def test_a_bad_filter_is_refused_inline_naming_it(owner, project, query, named):
    response = owner.get(url(project, "instances"), query)
    assert response.status_code == 400
    page = response.content.decode()
    assert f'id="id_{named}_error"' in page and 'id="filter-refused"' in page and 'class="project-nav"' in page
    assert 'id="data-instances"' not in page and "Unknown filter value" not in page


@pytest.mark.parametrize("target, error", [("-5", "Ensure this value is greater than or equal to 1."),
                                           ("abc", "Enter a whole number.")])
def test_a_bad_target_is_shown_at_its_field_on_the_list_page_with_the_value_kept(owner, project, target, error):
    make_family(project=project, name="Counting")
    response = owner.get(url(project, "families"), {"target": target, "q": "count"})
    assert response.status_code == 400
    page = response.content.decode()
    assert 'class="project-nav"' in page and 'class="inline-form data-filters"' in page
    field_error = page.split('id="id_target_error"', 1)[1].split("</span>", 1)[0]
    assert error in field_error
    field = page.split('id="id_target"', 1)[0].rsplit("<input", 1)[1]
    assert f'value="{target}"' in field and 'aria-invalid="true"' in field and "id_target_error" in field
    assert 'value="count"' in page
    assert "Unknown" not in page and 'id="back-link"' not in page and 'id="data-families"' not in page


def test_another_projects_family_is_not_a_filter_value(owner, project, researcher):
    theirs = make_family(project=create_project(name="Other", slug="other", owner=researcher))
    response = owner.get(url(project, "instances"), {"family": theirs.pk})
    assert response.status_code == 400 and 'id="id_family_error"' in response.content.decode()


def test_a_search_nothing_matches_says_so_and_offers_to_clear_it(owner, project):
    empty = owner.get(url(project, "instances")).content.decode()
    assert "Nothing here yet." in empty and "Nothing matches" not in empty
    make_instance(family=make_family(project=project), instruction="How many cats?")
    for query in ({"q": "zzzz"}, {"stage": "verified"}, {"q": "zzzz", "page": "2"}):
        page = owner.get(url(project, "instances"), query).content.decode()
        assert "Nothing matches this search or these filters." in page and "Nothing here yet" not in page
        assert f'<a href="{url(project, "instances")}" id="clear-filters">' in page
    # An empty search box filters nothing: the list is shown.
    assert len(ids(owner.get(url(project, "instances"), {"q": "", "stage": ""}))) == 1


def test_an_unknown_list_is_refused_not_a_crash(owner, project):
    response = owner.get(reverse("cockpit:data", args=[project.slug, "secrets"]))
    assert response.status_code == 400


def test_images_filter_by_license_category_and_text(owner, project):
    cc0 = make_image(project=project)
    by = Image.objects.create(project=project, url="https://photos.example.org/cat.png", license="CC-BY-4.0",
                              creator="Mika", category="animals")
    assert ids(owner.get(url(project, "images"))) == [cc0.pk, by.pk]
    assert ids(owner.get(url(project, "images"), {"license": "CC-BY-4.0"})) == [by.pk]
    assert ids(owner.get(url(project, "images"), {"category": "animals"})) == [by.pk]
    assert ids(owner.get(url(project, "images"), {"q": "mika"})) == [by.pk]
    assert ids(owner.get(url(project, "images"), {"q": "photos.example"})) == [by.pk]
    page = owner.get(url(project, "images")).content.decode()
    assert "CC-BY-4.0" in page and "CC0-1.0" in page
    assert owner.get(url(project, "images"), {"license": "MIT"}).status_code == 400


def test_review_sets_filter_by_language_category_and_review_text(owner, project):
    english = make_review_set(project=project, language="en", texts=[f"A calm lake {n}." for n in range(5)])
    japanese = make_review_set(project=project, language="ja")
    ReviewSet.objects.filter(pk=japanese.pk).update(category="food")
    assert ids(owner.get(url(project, "review-sets"))) == [english.pk, japanese.pk]
    assert ids(owner.get(url(project, "review-sets"), {"language": "ja"})) == [japanese.pk]
    assert ids(owner.get(url(project, "review-sets"), {"category": "food"})) == [japanese.pk]
    assert ids(owner.get(url(project, "review-sets"), {"q": "calm lake"})) == [english.pk]
    assert ids(owner.get(url(project, "review-sets"), {"q": english.external_id})) == [english.pk]
    assert owner.get(url(project, "review-sets"), {"language": "fr"}).status_code == 400


def test_model_outputs_filter_by_model_and_text(owner, project):
    instance = make_instance(family=make_family(project=project), instruction="Name the bird.")
    x, y = make_outputs(instance=instance, models=("model-x", "model-y"))
    assert ids(owner.get(url(project, "outputs"))) == [x.pk, y.pk]
    assert ids(owner.get(url(project, "outputs"), {"model": "model-y"})) == [y.pk]
    assert ids(owner.get(url(project, "outputs"), {"q": "model-x says"})) == [x.pk]
    assert ids(owner.get(url(project, "outputs"), {"q": "name the bird"})) == [x.pk, y.pk]
    assert owner.get(url(project, "outputs"), {"model": "model-z"}).status_code == 400


def test_lists_page_fifty_rows_at_a_time_with_filters_kept(owner, project):
    family = make_family(project=project)
    made = [make_instance(family=family, instruction=f"Question {n}?") for n in range(120)]
    first = owner.get(url(project, "instances"), {"q": "question"})
    assert ids(first) == [instance.pk for instance in made[:50]]
    assert first.context["page"].paginator.num_pages == 3
    page = first.content.decode()
    assert "page=2" in page and "q=question&amp;page=2" in page
    assert ids(owner.get(url(project, "instances"), {"q": "question", "page": "3"})) == [i.pk for i in made[100:]]
    # A page that is not a number, or past the end, is the first or the last page: never a crash.
    assert ids(owner.get(url(project, "instances"), {"page": "abc"})) == [i.pk for i in made[:50]]
    assert ids(owner.get(url(project, "instances"), {"page": "99"})) == [i.pk for i in made[100:]]
    copy_all = first.context["page_ids"]
    assert copy_all == ", ".join(str(instance.pk) for instance in made[:50])


def test_ids_are_shown_with_a_copy_button(owner, project):
    family = make_family(project=project)
    page = owner.get(url(project, "families")).content.decode()
    assert f'data-copy="{family.pk}"' in page and "cockpit/copy.js" in page


# --- details and history -------------------------------------------------------------------------


def test_an_instance_shows_its_rounds_judgments_and_verdicts_with_workers_escaped(owner, project):
    instance = make_instance(family=make_family(project=project), instruction="<b>Count</b> the <script>x</script>")
    candidate = ReferenceCandidate.objects.create(instance=instance, text="Three.", model_name="gpt-4")
    worker = make_worker("verifier-1")
    Verification.objects.create(candidate=candidate, outcome=Verification.Outcome.CORRECT, worker=worker.user,
                                comment="<img src=x onerror=alert(1)>")
    outputs = make_outputs(instance=instance)
    round = make_round(task_type="pairwise", targets=[tuple(outputs)], project=project)
    judge = make_worker("judge-1")
    assignment = request_assignment(round=round, worker=judge)
    submit_assignment(assignment_id=assignment.pk, worker=judge, data={"choice": "left"})

    response = owner.get(url(project, "instances", instance.pk))
    assert response.status_code == 200
    page = response.content.decode()
    assert round.name in page and "judge-1" in page and f"<code>{judge.pk}</code>" in page
    assert "verifier-1" in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<img src=x" not in page and "<script>x</script>" not in page
    assert "&lt;b&gt;Count&lt;/b&gt;" in page
    # The output in the round has the same history.
    output_page = owner.get(url(project, "outputs", outputs[0].pk)).content.decode()
    assert round.name in output_page and "judge-1" in output_page
    # The judgment names the model chosen, not the side of the worker's page.
    assignment.refresh_from_db()
    chosen = outputs[0] if assignment.result["winner"] == "a" else outputs[1]
    history = page.split('id="history-title"', 1)[1]
    assert f"<dt>chose</dt><dd>{chosen.model_name}</dd>" in history and "left" not in history


def _rank(review_set, worker, prompt_ranks):
    """``worker`` ranks ``review_set`` in its first open ranking item, reviews given by prompt rank, best first."""
    from annotation.models import CollectionRound
    from annotation.task_types.ranking import shown_review_ids

    round = CollectionRound.objects.get(items__review_set=review_set)
    assignment = request_assignment(round=round, worker=worker)
    shown = shown_review_ids(assignment)
    by_rank = {review.prompt_rank: review.pk for review in review_set.reviews.all()}
    order = [shown[by_rank[rank]] for rank in prompt_ranks]
    submit_assignment(assignment_id=assignment.pk, worker=worker, data={"order": order})
    return order


def test_a_ranking_reads_as_the_reviews_places_in_the_set_never_ids(owner, project):
    review_set = make_review_set(project=project)
    make_round(task_type="ranking", targets=[review_set], project=project)
    shown = _rank(review_set, make_worker("ranker-1"), [3, 1, 5, 2, 4])
    page = owner.get(url(project, "review-sets", review_set.pk)).content.decode()
    assert "ranker-1" in page and "review 3, 1, 5, 2, 4" in page
    assert "order" not in page.split('id="history-title"', 1)[1] and "[" not in page.split('id="history-title"', 1)[1]
    for shown_id in shown:
        assert str(shown_id) not in page


def test_a_review_set_shows_its_image_escaped(owner, project):
    image = Image.objects.create(project=project, url='https://images.example.org/a.png?x="><b>1</b>',
                                 license="CC0-1.0")
    review_set = make_review_set(project=project)
    ReviewSet.objects.filter(pk=review_set.pk).update(image=image)
    page = owner.get(url(project, "review-sets", review_set.pk)).content.decode()
    assert f'<img src="{escape(image.display_url)}"' in page
    assert '"><b>1</b>' not in page and f'alt="Image {image.pk}"' in page
    assert url(project, "images", image.pk) in page


def test_an_edited_instance_says_when_it_last_changed(owner, project):
    from datetime import timedelta

    from django.utils import timezone

    instance = make_instance(family=make_family(project=project), instruction="How many cats?")
    page = owner.get(url(project, "instances", instance.pk)).content.decode()
    assert "Added " in page and 'id="changed-at"' not in page
    # Test set-up: the instance was added a day ago.
    Instance.objects.filter(pk=instance.pk).update(created_at=timezone.now() - timedelta(days=1))
    assert owner.post(url(project, "instances", instance.pk, "edit"), {"instruction": "How many dogs?"}).status_code == 302
    instance.refresh_from_db()
    page = owner.get(url(project, "instances", instance.pk)).content.decode()
    changed = page.split('id="changed-at"', 1)[1].split("</p>", 1)[0]
    assert "Last edited or moved to another stage" in changed and instance.updated_at.strftime("%Y-%m-%d %H:%M") in changed


def test_a_row_nothing_used_says_so(owner, project):
    family = make_family(project=project)
    page = owner.get(url(project, "families", family.pk)).content.decode()
    assert 'id="no-history"' in page and 'id="edit-form"' in page and 'id="delete-form"' in page


# --- edits and deletes ------------------------------------------------------------------------------


def test_an_unused_instance_is_edited_through_the_data_service(owner, project):
    instance = make_instance(family=make_family(project=project), instruction="How many cats?")
    key = instance.content_key
    response = owner.post(url(project, "instances", instance.pk, "edit"), {"instruction": "  How many dogs?  "})
    assert response.status_code == 302
    instance.refresh_from_db()
    assert instance.instruction == "How many dogs?" and instance.content_key != key


def test_an_edit_is_checked_as_imports_check_it_and_shown_on_its_form(owner, project):
    instance = make_instance(family=make_family(project=project), instruction="How many cats?")
    response = owner.post(url(project, "instances", instance.pk, "edit"), {"instruction": "   "})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Instruction is empty." in page and 'id="edit-form"' in page
    instance.refresh_from_db()
    assert instance.instruction == "How many cats?"


def test_an_image_license_is_normalised_and_an_unknown_one_refused(owner, project):
    image = make_image(project=project)
    fields = {"license": "cc by 4.0", "creator": "Mika", "source_url": "https://example.org/p", "category": ""}
    assert owner.post(url(project, "images", image.pk, "edit"), fields).status_code == 302
    image.refresh_from_db()
    assert (image.license, image.creator) == ("CC-BY-4.0", "Mika")
    response = owner.post(url(project, "images", image.pk, "edit"), {**fields, "license": "my own license"})
    assert response.status_code == 400 and "license" in response.content.decode().lower()
    response = owner.post(url(project, "images", image.pk, "edit"), {**fields, "source_url": "javascript:x"})
    assert response.status_code == 400
    image.refresh_from_db()
    assert (image.license, image.source_url) == ("CC-BY-4.0", "https://example.org/p")


def test_a_family_name_stays_unique_in_its_project(owner, project):
    make_family(project=project, name="Counting")
    family = make_family(project=project, name="Colours")
    fields = {"name": "Counting", "description": "", "seed_instruction": "Q?", "seed_response": "A."}
    response = owner.post(url(project, "families", family.pk, "edit"), fields)
    assert response.status_code == 400 and "already exists" in response.content.decode()
    family.refresh_from_db()
    assert family.name == "Colours"
    assert owner.post(url(project, "families", family.pk, "edit"), {**fields, "name": "Shapes"}).status_code == 302
    family.refresh_from_db()
    assert (family.name, family.seed_instruction) == ("Shapes", "Q?")


def _refused_unchanged(response, *reasons):
    assert response.status_code == 409
    page = response.content.decode()
    assert 'id="refusal"' in page and 'id="back-link"' in page and "Nothing was changed" in page
    for reason in reasons:
        assert reason in page


def test_an_instance_in_a_round_is_neither_edited_nor_deleted(owner, project):
    instance = make_instance(family=make_family(project=project), instruction="How many cats?")
    make_round(task_type="caption", targets=[instance], project=project)
    detail = owner.get(url(project, "instances", instance.pk)).content.decode()
    assert 'id="used-because"' in detail and 'id="edit-form"' not in detail and "work item" in detail
    _refused_unchanged(owner.post(url(project, "instances", instance.pk, "edit"), {"instruction": "Changed?"},
                                  HTTP_REFERER="http://testserver" + url(project, "instances", instance.pk)),
                       "1 work item refers to it")
    _refused_unchanged(owner.post(url(project, "instances", instance.pk, "delete")), "work item")
    instance.refresh_from_db()
    assert instance.instruction == "How many cats?"


def test_verdicts_and_judged_outputs_count_as_use(owner, project):
    instance = make_instance(family=make_family(project=project))
    candidate = ReferenceCandidate.objects.create(instance=instance, text="Three.", model_name="gpt-4")
    Verification.objects.create(candidate=candidate, outcome=Verification.Outcome.CORRECT)
    _refused_unchanged(owner.post(url(project, "instances", instance.pk, "delete")), "verification")
    assert Instance.objects.filter(pk=instance.pk).exists()

    judged = make_instance(family=make_family(project=project))
    x, y = make_outputs(instance=judged)
    make_round(task_type="pairwise", targets=[(x, y)], project=project)
    _refused_unchanged(owner.post(url(project, "outputs", x.pk, "edit"), {"text": "Changed."}), "work item")
    _refused_unchanged(owner.post(url(project, "outputs", x.pk, "delete")))
    x.refresh_from_db()
    assert x.text == "model-x says something."


def test_a_family_with_instances_and_an_image_an_instance_shows_wait(owner, project):
    family = make_family(project=project)
    instance = make_instance(family=family)
    _refused_unchanged(owner.post(url(project, "families", family.pk, "delete")), "1 instance depends on it")
    image = instance.ordered_images()[0]
    response = owner.post(url(project, "images", image.pk, "delete"))
    assert response.status_code == 409 and "delete those first" in response.content.decode()
    assert InstructionFamily.objects.filter(pk=family.pk).exists() and Image.objects.filter(pk=image.pk).exists()


def test_an_image_shown_by_a_used_instance_is_not_edited(owner, project):
    instance = make_instance(family=make_family(project=project))
    make_round(task_type="caption", targets=[instance], project=project)
    image = instance.ordered_images()[0]
    _refused_unchanged(owner.post(url(project, "images", image.pk, "edit"), {"license": "CC0-1.0"}),
                       "This image cannot be edited: 1 instance that shows it is already used.")
    page = owner.get(url(project, "images", image.pk)).content.decode()
    assert "Not used by a round directly; shown by 1 instance, which is used." in page
    second = make_instance(family=instance.family)
    InstanceImage.objects.create(instance=second, image=image, position=1)
    make_round(task_type="caption", targets=[second], project=project)
    page = owner.get(url(project, "images", image.pk)).content.decode()
    assert "Not used by a round directly; shown by 2 instances, all of them used." in page


def test_an_images_history_and_refusal_count_what_shows_it_kind_by_kind(owner, project):
    family = make_family(project=project)
    first, second = make_instance(family=family), make_instance(family=family)
    image = first.ordered_images()[0]
    InstanceImage.objects.create(instance=second, image=image, position=1)
    FamilySeedImage.objects.create(family=family, image=image, position=1)
    for _ in range(2):
        ReviewSet.objects.create(project=project, image=image, language="en")
    make_round(task_type="caption", targets=[first, second], project=project)
    # Used: the two instances (in a round) and the family (it has instances); the review sets are not.
    page = owner.get(url(project, "images", image.pk)).content.decode()
    history = page.split('id="history-title"', 1)[1].split("</section>", 1)[0]
    assert 'id="no-history"' not in history
    assert ("Not used by a round directly; shown by 2 instances, 1 family and 2 review sets, of which 3 are used: "
            "2 instances and 1 family.") in history
    assert "2 instances and 1 family that show it are used" in page
    for action, done in (("edit", "edited"), ("delete", "deleted")):
        response = owner.post(url(project, "images", image.pk, action),
                              {"license": "CC0-1.0", "creator": "", "source_url": "", "category": ""})
        _refused_unchanged(response, f"This image cannot be {done}: 2 instances and 1 family that show it "
                                     "are already used.")
        assert "5 instances" not in response.content.decode() and "3 instances" not in response.content.decode()
    assert Image.objects.filter(pk=image.pk).exists()


def test_an_unused_image_says_what_shows_it_and_waits_for_them(owner, project):
    review_set = make_review_set(project=project)
    page = owner.get(url(project, "images", review_set.image_id)).content.decode()
    assert "Not used by a round directly; shown by 1 review set, of which none is used." in page
    response = owner.post(url(project, "images", review_set.image_id, "delete"))
    assert response.status_code == 409
    assert "This image cannot be deleted while 1 review set shows it; delete those first." in response.content.decode()
    lonely = make_image(project=project)
    page = owner.get(url(project, "images", lonely.pk)).content.decode()
    assert "Not used by a round, and nothing shows it." in page


def test_unused_rows_are_deleted_with_what_is_their_own(owner, project):
    instance = make_instance(family=make_family(project=project))
    make_outputs(instance=instance)
    response = owner.post(url(project, "instances", instance.pk, "delete"))
    assert response.status_code == 302 and response["Location"] == url(project, "instances")
    assert not Instance.objects.filter(pk=instance.pk).exists()
    assert not Caption.objects.filter(instance_id=instance.pk).exists()
    assert not ModelOutput.objects.filter(instance_id=instance.pk).exists()
    review_set = make_review_set(project=project)
    assert owner.post(url(project, "review-sets", review_set.pk, "delete")).status_code == 302
    assert not ReviewSet.objects.filter(pk=review_set.pk).exists()


# --- who may --------------------------------------------------------------------------------------------


def test_a_non_member_is_refused_as_if_nothing_were_there(client, make_researcher, project):
    family = make_family(project=project)
    client.force_login(make_researcher("stranger"))
    assert client.get(url(project, "families")).status_code == 404
    assert client.get(url(project, "families", family.pk)).status_code == 404
    response = client.post(url(project, "families", family.pk, "delete"))
    assert response.status_code == 404 and InstructionFamily.objects.filter(pk=family.pk).exists()


def test_a_person_who_is_not_a_researcher_is_refused(client, django_user_model, project):
    client.force_login(django_user_model.objects.create_user("someone", password="x-pass-123"))
    assert client.get(url(project, "families")).status_code == 403


def test_a_collaborator_reads_but_does_not_change(client, collaborator, project):
    family = make_family(project=project, name="Counting")
    client.force_login(collaborator)
    page = client.get(url(project, "families", family.pk)).content.decode()
    assert 'id="edit-form"' not in page and "Only the project" in page
    response = client.post(url(project, "families", family.pk, "edit"),
                           {"name": "Changed", "seed_instruction": "Q?", "seed_response": "A."})
    assert response.status_code == 403
    assert client.post(url(project, "families", family.pk, "delete")).status_code == 403
    family.refresh_from_db()
    assert family.name == "Counting"


@pytest.mark.parametrize("kind", ["families", "instances", "images", "review-sets", "outputs"])
def test_a_forged_id_of_another_project_is_not_found(owner, researcher, project, kind):
    other = create_project(name="Other", slug="other", owner=researcher)
    instance = make_instance(family=make_family(project=other))
    rows = {"families": instance.family, "instances": instance, "images": instance.ordered_images()[0],
            "review-sets": make_review_set(project=other), "outputs": make_outputs(instance=instance)[0]}
    row = rows[kind]
    for action in (None, "edit", "delete"):
        response = (owner.get if action is None else owner.post)(url(project, kind, row.pk, action))
        assert response.status_code == 404
    assert type(row).objects.filter(pk=row.pk).exists()


# --- the round builder links to the browser ------------------------------------------------------


def test_the_builders_id_fields_link_to_the_data_browser(owner, project):
    page = owner.get(reverse("cockpit:round-new", args=[project.slug]),
                     {"kind": "instruction_generation:families"}).content.decode()
    assert 'id="browse-family_ids"' in page and url(project, "families") in page
    page = owner.get(reverse("cockpit:round-new", args=[project.slug]),
                     {"kind": "caption:awaiting_caption"}).content.decode()
    assert 'id="browse-instance_ids"' in page and url(project, "instances") in page


# --- size --------------------------------------------------------------------------------------------


def _statements(client, address, query=None) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert client.get(address, query or {}).status_code == 200
    return len(queries)


@pytest.mark.database_sensitive
def test_a_list_page_costs_the_same_statements_however_many_rows(owner, project):
    """A page reads its 50 rows and the count, never a statement per row: the lists work with 100k rows."""
    family = make_family(project=project)
    instance = make_instance(family=family)
    make_outputs(instance=instance)
    make_review_set(project=project)
    addresses = [url(project, kind) for kind in ("families", "instances", "images", "review-sets", "outputs")]
    few = [_statements(owner, address) for address in addresses]
    for _ in range(3):
        make_family(project=project)
    for _ in range(60):
        make_outputs(instance=make_instance(family=family))
        make_review_set(project=project)
    assert [_statements(owner, address) for address in addresses] == few


def test_hostile_input_is_a_refusal_never_a_crash(owner, project):
    family = make_family(project=project, name="Counting")
    assert owner.get(url(project, "families"), {"q": "a\x00b"}).status_code == 400
    assert owner.get(url(project, "instances"), {"family": "1\x00"}).status_code == 400
    fields = {"name": "Counting", "description": "x\x00y", "seed_instruction": "Q?", "seed_response": "A."}
    assert owner.post(url(project, "families", family.pk, "edit"), fields).status_code == 400
    response = owner.post(url(project, "families", family.pk, "edit"), {**fields, "description": "x" * 5001})
    assert response.status_code == 400 and 'id="id_description-error"' in response.content.decode()
    family.refresh_from_db()
    assert family.description == "Questions about simple scenes."


def test_an_output_the_judge_compared_is_used(owner, project):
    from evaluation.models import JudgedBattle

    instance = make_instance(family=make_family(project=project))
    x, y = make_outputs(instance=instance, models=("model-x", "model-y"))
    z, = make_outputs(instance=instance, models=("model-z",))
    JudgedBattle.objects.create(instance=instance, model_a="model-x", model_b="reference", winner="model_a",
                                judge_model="judge", with_reference=False, prompt_template="t", prompt_version=1)
    _refused_unchanged(owner.post(url(project, "outputs", x.pk, "edit"), {"text": "Changed."}),
                       "1 judged battle compared it")
    assert owner.post(url(project, "outputs", z.pk, "edit"), {"text": "Changed."}).status_code == 302
    # The battle belongs to the instance: the instance is used too.
    _refused_unchanged(owner.post(url(project, "instances", instance.pk, "delete")), "judged battle")
    x.refresh_from_db()
    assert x.text == "model-x says something."
