"""Editing a draft round (settings and items, through the builder's form and checks) and cloning any
round into a new draft, from the round page; refusals are shown on the page and change nothing."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.forms.models import model_to_dict
from django.urls import reverse

from annotation.models import CollectionRound, WorkItem
from annotation.services.rounds import cancel_round, create_round, open_round
from projects.services import create_project

from .test_pages import builder_data, draft_round, outputs_in, round_url

pytestmark = pytest.mark.django_db


def edit_data(action="save", source=None, **changes):
    """The edit form as the page fills it, with the builder's field names."""
    data = {key: value for key, value in builder_data(action=action).items()
            if key.startswith("round-") or (source and key.startswith("source-"))}
    data["action"] = action
    if source:
        data["source"] = source
    data.update(changes)
    return data


def stored(round):
    round.refresh_from_db()
    return model_to_dict(round), list(round.items.order_by("position").values_list("pk", flat=True))


def test_the_edit_form_shows_the_drafts_own_settings(client, researcher, project):
    round = draft_round(project, qualification_rules={"min_approved_tasks": 4, "providers": ["local"]},
                        budget_cap=Decimal("12.00"))
    client.force_login(researcher)
    page = client.get(round_url(round, "cockpit:round")).content.decode()
    assert 'id="round-edit"' in page
    response = client.get(round_url(round, "cockpit:round-edit"))
    assert response.status_code == 200
    form = response.context["settings_form"]
    assert form["name"].value() == "R" and form["reward_per_task"].value() == Decimal("0.50")
    assert form["budget_cap"].value() == Decimal("12.00") and form["min_approved_tasks"].value() == 4
    assert form["allowed_providers"].value() == ["local"]
    kept = response.content.decode().split('id="items-kept">')[1].split("</p>")[0]
    assert "9 items are kept" in " ".join(kept.split())


def test_a_draft_made_with_reward_zero_is_fixed_by_editing_its_settings(client, researcher, project):
    round = draft_round(project, reward_per_task=Decimal("0.00"), qualification_rules={"qualified_only": True})
    items_before = list(round.items.values_list("pk", flat=True))
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-edit"), edit_data(**{
        "round-name": "Fixed", "round-reward_per_task": "0.40", "round-min_approved_tasks": "2"}))
    assert response.status_code == 302 and response["Location"] == round_url(round)
    round.refresh_from_db()
    assert (round.name, round.reward_per_task, round.status) == ("Fixed", Decimal("0.40"), "draft")
    assert (round.workers_per_item, round.budget_cap, round.time_limit_seconds) == (3, Decimal("50.00"), 600)
    # A rule the form does not set is kept; the form's own rules are the form's.
    assert round.qualification_rules == {"qualified_only": True, "min_approved_tasks": 2}
    assert list(round.items.values_list("pk", flat=True)) == items_before


def test_editing_replaces_the_items_through_the_builders_source_and_preview(client, researcher, project):
    round = draft_round(project)
    outputs_in(project, instances=2)  # more outputs of the same models: more pairs to draw
    old_items = set(round.items.values_list("pk", flat=True))
    client.force_login(researcher)
    url = round_url(round, "cockpit:round-edit")
    page = client.get(url + "?source=model_outputs").content.decode()
    assert 'name="source-sampler"' in page
    data = edit_data(source="model_outputs", **{"source-sampler": "uniform", "source-count": "4",
                                                "source-seed": "3"})
    preview = client.post(url, {**data, "action": "preview"})
    assert preview.status_code == 200 and "4 items" in preview.content.decode()
    assert set(round.items.values_list("pk", flat=True)) == old_items  # a preview writes nothing
    shown = [spec.label for spec in preview.context["plan"].specs]
    response = client.post(url, data)
    assert response.status_code == 302
    items = list(round.items.order_by("position"))
    assert len(items) == 4 and not old_items & {item.pk for item in items}
    assert [f"#{i.output_a.instance_id}: {i.side_a_name} vs {i.side_b_name}" for i in items] == shown
    assert not WorkItem.objects.filter(pk__in=old_items).exists()


def test_bad_settings_are_refused_on_the_edit_form_and_nothing_changes(client, researcher, project):
    round = draft_round(project)
    before = stored(round)
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-edit"), edit_data(**{
        "round-reward_per_task": "-1", "round-name": "Changed"}))
    assert response.status_code == 400
    assert 'name="round-name"' in response.content.decode() and 'value="Changed"' in response.content.decode()
    assert response.context["settings_form"].errors["reward_per_task"]
    # The model's own check (a whole-yen amount) is the same as on creation, shown on the form.
    response = client.post(round_url(round, "cockpit:round-edit"), edit_data(**{
        "round-currency": "JPY", "round-reward_per_task": "0.50", "round-target_hourly_wage": "1000"}))
    assert response.status_code == 400 and "round settings refused" in response.content.decode()
    assert stored(round) == before


def test_gold_answers_without_new_items_are_refused(client, researcher, project):
    round = draft_round(project)
    before = stored(round)
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-edit"),
                           edit_data(**{"round-gold_answers": '{"1": {"winner": "a"}}'}))
    assert response.status_code == 400 and "gold answers go with new items" in response.content.decode()
    assert stored(round) == before


@pytest.mark.parametrize("make_it", ["open", "cancelled"])
def test_a_round_that_is_not_a_draft_is_not_edited_and_says_why(client, researcher, project, make_it):
    round = draft_round(project)
    (open_round if make_it == "open" else cancel_round)(round=round)
    before = stored(round)
    client.force_login(researcher)
    page = client.get(round_url(round)).content.decode()
    assert 'id="round-edit"' not in page
    shown = client.get(round_url(round, "cockpit:round-edit"))
    assert shown.status_code == 409
    assert "Only a draft round can be edited" in shown.content.decode()
    assert 'id="edit-refusal"' in shown.content.decode() and "Study A" in shown.content.decode()
    posted = client.post(round_url(round, "cockpit:round-edit"), edit_data(**{"round-reward_per_task": "0.90"}))
    assert posted.status_code == 409
    assert "cannot edit" in posted.content.decode() and 'value="0.90"' in posted.content.decode()
    replaced = client.post(round_url(round, "cockpit:round-edit"), edit_data(source="model_outputs"))
    assert replaced.status_code == 409
    assert stored(round) == before


def test_clone_copies_settings_and_items_into_a_new_draft(client, researcher, project):
    round = draft_round(project, budget_cap=Decimal("9.00"), qualification_rules={"language_matched": True})
    first = round.items.order_by("position").first()
    WorkItem.objects.filter(pk=first.pk).update(is_gold=True, gold_answer={"winner": "b"})
    round.consent_text = "Please read this."
    round.save()
    open_round(round=round)
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-clone"), {"name": ""})
    copy = CollectionRound.objects.exclude(pk=round.pk).get()
    assert response.status_code == 302 and response["Location"] == round_url(copy)
    assert copy.status == "draft" and copy.name == "R (copy)" and copy.created_by == researcher
    for field in ("project", "task_type", "workers_per_item", "reward_per_task", "budget_cap", "qualification_rules",
                  "consent_text", "language", "currency", "time_limit_seconds"):
        assert getattr(copy, field) == getattr(round, field), field
    pairs = lambda r: [(i.output_a_id, i.output_b_id, i.reference_id, i.is_gold, i.gold_answer)  # noqa: E731
                       for i in r.items.order_by("position")]
    assert pairs(copy) == pairs(round) and len(pairs(copy)) == 9
    round.refresh_from_db()
    assert round.status == "open"
    named = client.post(round_url(round, "cockpit:round-clone"), {"name": "Second batch"})
    assert named.status_code == 302 and CollectionRound.objects.filter(name="Second batch", status="draft").exists()


def test_a_clone_that_todays_checks_refuse_is_shown_on_the_clone_form(client, researcher, project):
    round = draft_round(project)
    CollectionRound.objects.filter(pk=round.pk).update(reward_per_task=Decimal("-1.00"))  # stored past the checks
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-clone"), {"name": "Copy"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "round settings refused" in page and 'id="clone-form"' in page and 'value="Copy"' in page
    assert CollectionRound.objects.count() == 1


def test_collaborators_and_strangers_neither_edit_nor_clone(client, collaborator, make_researcher, project):
    round = draft_round(project)
    before = stored(round)
    client.force_login(collaborator)
    assert 'id="round-edit"' not in client.get(round_url(round)).content.decode()
    assert client.get(round_url(round, "cockpit:round-edit")).status_code == 403
    assert client.post(round_url(round, "cockpit:round-edit"), edit_data()).status_code == 403
    assert client.post(round_url(round, "cockpit:round-clone"), {}).status_code == 403
    stranger = make_researcher("eve")
    theirs = create_project(name="Other", slug="other", owner=stranger)
    client.force_login(stranger)
    # Another project's round, under the stranger's own project or under its own: 404, never a 500.
    for url in (reverse("cockpit:round-edit", args=[theirs.slug, round.pk]),
                reverse("cockpit:round-clone", args=[theirs.slug, round.pk]),
                round_url(round, "cockpit:round-edit"), round_url(round, "cockpit:round-clone")):
        assert client.post(url, edit_data()).status_code == 404, url
    assert stored(round) == before and CollectionRound.objects.count() == 1


def test_a_round_without_a_project_source_refusal_is_shown_on_the_form(client, researcher, project):
    round = create_round(name="Empty", task_type="pairwise", project=project)
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-edit"), edit_data(source="model_outputs"))
    assert response.status_code == 400, response.context["settings_form"].errors
    assert "no pairs to draw" in response.content.decode()
    assert not round.items.exists()
