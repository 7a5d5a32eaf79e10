"""Cockpit rounds: the builder, the round page, launch controls, publishing to the provider fakes, the
task preview; owners act, collaborators look, strangers get 404."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.errors import InvalidTransition
from annotation.models import Assignment, CollectionRound, WorkItem
from annotation.services.engine import request_assignment
from annotation.services.review import reject_assignment
from annotation.services.rounds import cancel_round, open_round, pause_round, widen_eligibility
from annotation.services.submissions import submit_assignment
from annotation.services.workers import set_worker_languages
from providers.models import Publication
from providers.prolific.provider import ProlificProvider
from tests.annotation.factories import make_project_outputs, make_worker

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta", "gamma")


def outputs_in(project, *, instances=3):
    return make_project_outputs(project=project, instances=instances, models=MODELS)


def builder_data(action="preview", **changes):
    data = {
        "kind": "pairwise:model_outputs", "action": action, "source-sampler": "all_pairs", "source-seed": "7",
        "round-name": "Pairwise batch", "round-language": "en", "round-workers_per_item": "3",
        "round-reward_per_task": "0.30", "round-currency": "USD", "round-target_hourly_wage": "18.00",
        "round-time_limit_seconds": "600", "round-budget_cap": "50.00", "round-provider": "mturk",
        "round-expected_seconds": "60",
    }
    data.update(changes)
    return data


def new_url(project):
    return reverse("cockpit:round-new", args=[project.slug])


def round_url(round, name="cockpit:round", **kwargs):
    return reverse(name, kwargs={"slug": round.project.slug, "round_id": round.pk, **kwargs})


def draft_round(project, **settings):
    from annotation import round_builder

    outputs_in(project)
    round, _plan = round_builder.create_round_from_source(
        project=project, created_by=None,
        settings={"name": "R", "task_type": "pairwise", "workers_per_item": 2, "reward_per_task": Decimal("0.50"),
                  **settings},
        source="model_outputs", params={"sampler": "all_pairs", "seed": 1})
    return round


# --- the builder -----------------------------------------------------------------------------------


def test_builder_lists_every_task_type_with_its_sources(client, researcher, project):
    client.force_login(researcher)
    page = client.get(new_url(project)).content.decode()
    for kind in ("instruction_generation:families", "caption:awaiting_caption", "verification:reference_candidates",
                 "pairwise:model_outputs", "ranking:review_sets"):
        assert f'data-kind="{kind}"' in page


def test_preview_shows_items_balance_and_cost_and_writes_nothing(client, researcher, project):
    outputs_in(project, instances=4)
    client.force_login(researcher)
    response = client.post(new_url(project), builder_data())
    assert response.status_code == 200
    page = response.content.decode()
    assert "12 items" in page and "seed 7" in page
    per_model = re.search(r'id="balance-per-model".*?</table>', page, re.S).group(0)
    assert per_model.count("<td>8</td>") == 3
    # 12 items x 3 workers x 0.30 = 10.80 rewards; MTurk's fee 20 % with its 0.01 minimum = 0.06 a task.
    assert "10.80 USD" in page and "2.16 USD" in page
    assert "within the cap" in page and "null</textarea>" not in page
    assert not CollectionRound.objects.exists() and not WorkItem.objects.exists()


def test_preview_draws_a_seed_and_create_makes_exactly_the_previewed_items(client, researcher, project):
    outputs_in(project, instances=5)
    client.force_login(researcher)
    data = builder_data(**{"source-sampler": "uniform", "source-count": "6", "source-seed": ""})
    page = client.post(new_url(project), data).content.decode()
    seed = re.search(r'name="source-seed" value="(\d+)"', page).group(1)
    shown = re.findall(r"<td>\d+</td><td>(#\d+: \w+ vs \w+)</td>", page)
    assert len(shown) == 6
    response = client.post(new_url(project), {**data, "action": "create", "source-seed": seed})
    assert response.status_code == 302
    round = CollectionRound.objects.get()
    assert round.project == project and round.created_by == researcher and round.status == "draft"
    assert (round.workers_per_item, round.reward_per_task, round.budget_cap) == (3, Decimal("0.30"), Decimal("50.00"))
    labels = [f"#{item.output_a.instance_id}: {item.side_a_name} vs {item.side_b_name}"
              for item in round.items.order_by("position")]
    assert labels == shown


def test_cost_over_the_cap_and_wage_below_target_are_flagged(client, researcher, project):
    outputs_in(project)
    client.force_login(researcher)
    page = client.post(new_url(project), builder_data(**{"round-budget_cap": "1.00", "round-expected_seconds": "120"})).content.decode()
    assert "over the cap" in page and "below the target" in page and "9.00 USD/h" in page


def test_settings_become_qualification_rules(client, researcher, project):
    outputs_in(project)
    client.force_login(researcher)
    client.post(new_url(project), builder_data(action="create", **{
        "round-min_approved_tasks": "5", "round-allowed_providers": ["prolific", "mturk"],
        "round-language_matched": "on"}))
    rules = CollectionRound.objects.get().qualification_rules
    assert rules == {"min_approved_tasks": 5, "providers": ["mturk", "prolific"], "language_matched": True}


def test_tasks_per_prolific_participant_becomes_a_rule_and_bonuses_in_the_estimate(client, researcher, project):
    outputs_in(project)
    client.force_login(researcher)
    preview = client.post(new_url(project), builder_data(**{
        "round-tasks_per_participant": "3", "round-provider": "prolific"}))
    assert preview.status_code == 200 and preview.context["cost"].estimate.expected_bonuses > 0
    assert client.post(new_url(project), builder_data(**{"round-tasks_per_participant": "0"})).status_code == 400
    assert not CollectionRound.objects.exists()
    client.post(new_url(project), builder_data(action="create", **{"round-tasks_per_participant": "3"}))
    assert CollectionRound.objects.get().qualification_rules == {"tasks_per_participant": 3}


def test_gold_items_are_set_by_their_preview_number(client, researcher, project):
    outputs_in(project)
    client.force_login(researcher)
    gold = '{"2": {"winner": "a"}, "9": {"winner": "b"}}'
    assert "2 gold items" in client.post(new_url(project), builder_data(**{"round-gold_answers": gold})).content.decode()
    assert client.post(new_url(project), builder_data(action="create", **{"round-gold_answers": gold})).status_code == 302
    items = CollectionRound.objects.get().items.order_by("position")
    assert [(item.position, item.gold_answer) for item in items if item.is_gold] == [
        (1, {"winner": "a"}), (8, {"winner": "b"})]


@pytest.mark.parametrize("gold, shown", [
    ('{"10": {"winner": "a"}}', "there is no item 10; the plan has 9"),
    ('{"first": {"winner": "a"}}', "is not an item number"),
    ('{"1": "a"}', "needs its expected result as an object"),
    ('[1, 2]', "must be an object"),
    ('{"1": ', "Enter a valid JSON"),
])
def test_bad_gold_answers_are_refused_and_create_nothing(client, researcher, project, gold, shown):
    outputs_in(project)
    client.force_login(researcher)
    response = client.post(new_url(project), builder_data(action="create", **{"round-gold_answers": gold}))
    assert response.status_code == 400 and shown in response.content.decode()
    assert not CollectionRound.objects.exists() and not WorkItem.objects.exists()


@pytest.mark.parametrize("changes, shown", [
    ({"source-sampler": "best"}, "Select a valid choice"),
    ({"source-seed": "-3"}, "greater than or equal to 0"),
    ({"round-workers_per_item": "0"}, "greater than or equal to 1"),
    ({"round-reward_per_task": "lots"}, "Enter a number"),
    ({"round-time_limit_seconds": "5"}, "greater than or equal to 30"),
])
def test_bad_builder_input_is_a_form_error_and_creates_nothing(client, researcher, project, changes, shown):
    outputs_in(project)
    client.force_login(researcher)
    response = client.post(new_url(project), builder_data(action="create", **changes))
    assert response.status_code == 400
    assert shown in response.content.decode()
    assert not CollectionRound.objects.exists()


def test_a_source_with_nothing_to_give_is_a_clear_400(client, researcher, project):
    client.force_login(researcher)
    response = client.post(new_url(project), builder_data())
    assert response.status_code == 400
    assert "no pairs to draw" in response.content.decode()
    response = client.get(new_url(project) + "?kind=pairwise:nothing")
    assert response.status_code == 400 and "its sources: model_outputs" in response.content.decode()


def test_another_projects_outputs_cannot_be_named(client, researcher, make_researcher, project):
    from projects.services import create_project

    other = create_project(name="Other", slug="other", owner=make_researcher("olga"))
    theirs = outputs_in(other)
    client.force_login(researcher)
    response = client.post(new_url(project), builder_data(action="create", **{"source-instance_ids": str(theirs[0].pk)}))
    assert response.status_code == 400
    assert not CollectionRound.objects.exists()


# --- permissions -----------------------------------------------------------------------------------


def test_collaborator_looks_but_cannot_build_or_launch(client, collaborator, project):
    round = draft_round(project)
    item = round.items.first()
    client.force_login(collaborator)
    assert client.get(round_url(round)).status_code == 200
    assert "round-open" not in client.get(round_url(round)).content.decode()
    assert client.get(round_url(round, "cockpit:round-item-preview", item_id=item.pk)).status_code == 200
    assert client.get(new_url(project)).status_code == 403
    assert client.post(new_url(project), builder_data(action="create")).status_code == 403
    for name in ("cockpit:round-open", "cockpit:round-cancel", "cockpit:round-dry-run", "cockpit:round-publish",
                 "cockpit:round-extend"):
        assert client.post(round_url(round, name), {"provider": "mturk", "time_limit_seconds": "4000"}).status_code == 403
    round.refresh_from_db()
    assert round.status == "draft" and round.time_limit_seconds == 1800


def test_non_member_gets_not_found_everywhere(client, make_researcher, project):
    round = draft_round(project)
    item = round.items.first()
    client.force_login(make_researcher("eve"))
    for url in (new_url(project), round_url(round), round_url(round, "cockpit:round-item-preview", item_id=item.pk)):
        response = client.get(url)
        assert response.status_code == 404 and "Pairwise" not in response.content.decode()
    assert client.post(round_url(round, "cockpit:round-open")).status_code == 404
    round.refresh_from_db()
    assert round.status == "draft"


def test_a_round_of_another_project_is_not_found_under_mine(client, researcher, make_researcher, project):
    from projects.services import create_project

    other = create_project(name="Other", slug="other", owner=make_researcher("olga"))
    theirs = draft_round(other)
    client.force_login(researcher)
    url = reverse("cockpit:round", kwargs={"slug": project.slug, "round_id": theirs.pk})
    assert client.get(url).status_code == 404
    assert client.post(url + "open/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.status == "draft"


def test_anonymous_is_sent_to_log_in(client, project):
    response = client.get(new_url(project))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- the round page and its controls -----------------------------------------------------------------


def test_round_page_shows_settings_progress_balance_and_paged_items(client, researcher, project):
    outputs_in(project, instances=10)
    from annotation import round_builder

    round, _plan = round_builder.create_round_from_source(
        project=project, created_by=researcher, settings={"name": "Big", "task_type": "pairwise"},
        source="model_outputs", params={"sampler": "all_pairs", "seed": 2})
    client.force_login(researcher)
    page = client.get(round_url(round)).content.decode()
    assert "0 of 30 items done" in page and "Page 1 of 2" in page
    assert page.count("/preview/") == 25
    assert client.get(round_url(round) + "?page=2").content.decode().count("/preview/") == 5
    assert 'id="balance-per-model"' in page


def test_open_pause_resume_extend_close_from_the_page(client, researcher, project):
    round = draft_round(project, budget_cap=Decimal("20.00"))
    client.force_login(researcher)
    for action, status in (("open", "open"), ("pause", "paused"), ("resume", "open")):
        response = client.post(round_url(round, f"cockpit:round-{action}"))
        assert response.status_code == 302
        round.refresh_from_db()
        assert round.status == status
    response = client.post(round_url(round, "cockpit:round-extend"), {"time_limit_seconds": "3600", "budget_cap": "30"})
    assert response.status_code == 302
    round.refresh_from_db()
    assert (round.time_limit_seconds, round.budget_cap) == (3600, Decimal("30.00"))
    lower = client.post(round_url(round, "cockpit:round-extend"), {"budget_cap": "10"})
    assert lower.status_code == 409 and "can only grow" in lower.content.decode()
    empty = client.post(round_url(round, "cockpit:round-extend"), {})
    assert empty.status_code == 400 and "Give a longer time limit" in empty.content.decode()
    assert client.post(round_url(round, "cockpit:round-close")).status_code == 302
    round.refresh_from_db()
    assert round.status == "closed"
    again = client.post(round_url(round, "cockpit:round-pause"))
    assert again.status_code == 409 and "cannot pause a round that is closed" in again.content.decode()


def test_status_buttons_are_posts_only(client, researcher, project):
    round = draft_round(project)
    client.force_login(researcher)
    assert client.get(round_url(round, "cockpit:round-open")).status_code == 405
    round.refresh_from_db()
    assert round.status == "draft"


# --- publishing from the page ----------------------------------------------------------------------


def dry_run(client, round, provider):
    response = client.post(round_url(round, "cockpit:round-dry-run"), {"provider": provider, "expected_seconds": "60"})
    assert response.status_code == 200, response.content.decode()[-2000:]
    page = response.content.decode()
    token = re.search(r'name="dry_run" value="([^"]+)"', page).group(1)
    return page, token


def publish_from_page(client, round, provider, token):
    """Confirm the publication as the page's form does, with the token of a dry run of the round."""
    response = client.post(round_url(round, "cockpit:round-publish"),
                           {"provider": provider, "expected_seconds": "60", "dry_run": token, "confirm": "on"})
    assert response.status_code == 302


@pytest.mark.parametrize("provider", ["mturk", "prolific"])
def test_dry_run_then_confirmed_publish_reaches_the_provider_fake(client, researcher, project, provider,
                                                                 mturk_fake, prolific_fake):
    round = draft_round(project, workers_per_item=2, reward_per_task=Decimal("1.50"), budget_cap=Decimal("100"))
    client.force_login(researcher)
    page, token = dry_run(client, round, provider)
    assert f"DRY RUN on {provider}" in page and "tasks submitted: 18" in page
    assert 'id="cost-estimate"' in page and "I confirm" in page
    assert not Publication.objects.exists() and not Assignment.objects.exists()
    round.refresh_from_db()
    assert round.status == "draft"
    fake = mturk_fake if provider == "mturk" else prolific_fake
    assert fake.calls() == []  # the dry run used its own in-process fake

    unconfirmed = client.post(round_url(round, "cockpit:round-publish"),
                              {"provider": provider, "expected_seconds": "60", "dry_run": token})
    assert unconfirmed.status_code == 400 and "Tick the confirmation" in unconfirmed.content.decode()
    assert not Publication.objects.exists()

    response = client.post(round_url(round, "cockpit:round-publish"),
                           {"provider": provider, "expected_seconds": "60", "dry_run": token, "confirm": "on"})
    assert response.status_code == 302
    publication = Publication.objects.get(round=round, provider=provider)
    assert publication.status == Publication.Status.PUBLISHED
    round.refresh_from_db()
    assert round.status == "open"
    if provider == "mturk":
        assert len(mturk_fake.calls("CreateHITWithHITType")) == 9
    else:
        assert prolific_fake.calls("POST /api/v1/studies/")[0].params["body"]["total_available_places"] == 18


def test_publish_needs_a_dry_run_of_the_round_as_it_is(client, researcher, project, mturk_fake, dry_run_token):
    round = draft_round(project)
    client.force_login(researcher)
    forged = client.post(round_url(round, "cockpit:round-publish"),
                         {"provider": "mturk", "expected_seconds": "60", "dry_run": "made-up", "confirm": "on"})
    assert forged.status_code == 400 and "dry run first" in forged.content.decode()
    token = dry_run_token(round, "mturk")
    other_provider = client.post(round_url(round, "cockpit:round-publish"),
                                 {"provider": "prolific", "expected_seconds": "60", "dry_run": token, "confirm": "on"})
    assert other_provider.status_code == 400 and "changed since the dry run" in other_provider.content.decode()
    open_round(round=round)
    changed = client.post(round_url(round, "cockpit:round-publish"),
                          {"provider": "mturk", "expected_seconds": "60", "dry_run": token, "confirm": "on"})
    assert changed.status_code == 400
    assert not Publication.objects.exists() and mturk_fake.calls("CreateHITWithHITType") == []


def test_over_budget_round_is_stopped_at_the_dry_run(client, researcher, project, mturk_fake):
    round = draft_round(project, budget_cap=Decimal("1.00"))
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-dry-run"), {"provider": "mturk", "expected_seconds": "60"})
    assert response.status_code == 409 and "exceeds the budget cap 1.00" in response.content.decode()
    assert "I confirm" not in response.content.decode()
    assert not Publication.objects.exists() and mturk_fake.calls() == []


def test_extend_and_close_reach_the_mturk_hits(client, researcher, project, mturk_fake, dry_run_token):
    round = draft_round(project, budget_cap=Decimal("100"))
    client.force_login(researcher)
    publish_from_page(client, round, "mturk", dry_run_token(round, "mturk"))
    assert client.post(round_url(round, "cockpit:round-extend"), {"time_limit_seconds": "3600"}).status_code == 302
    extended = mturk_fake.calls("UpdateExpirationForHIT")
    assert len(extended) == 9
    now = datetime.now(timezone.utc).timestamp()
    assert all(float(call.params["ExpireAt"]) > now + 3600 for call in extended)
    assert client.post(round_url(round, "cockpit:round-close")).status_code == 302
    stopped = mturk_fake.calls("UpdateExpirationForHIT")[9:]
    assert len(stopped) == 9 and all(float(call.params["ExpireAt"]) < now for call in stopped)
    assert Publication.objects.get().status == Publication.Status.EXPIRED


def test_close_stops_the_prolific_study(client, researcher, project, prolific_fake, dry_run_token):
    round = draft_round(project, budget_cap=Decimal("100"))
    client.force_login(researcher)
    publish_from_page(client, round, "prolific", dry_run_token(round, "prolific"))
    client.post(round_url(round, "cockpit:round-pause"))
    assert client.post(round_url(round, "cockpit:round-close")).status_code == 302
    actions = [call.params["body"]["action"] for call in prolific_fake.calls("POST /api/v1/studies/{id}/transition/")]
    assert actions[-1] == "STOP"


def test_pause_and_resume_reach_the_prolific_study(client, researcher, project, prolific_fake, dry_run_token):
    round = draft_round(project, budget_cap=Decimal("100"))
    client.force_login(researcher)
    publish_from_page(client, round, "prolific", dry_run_token(round, "prolific"))
    study_id = Publication.objects.get().external_id
    def study_status():
        return ProlificProvider()._request("GET", f"studies/{study_id}/")["status"]

    client.post(round_url(round, "cockpit:round-pause"))
    assert study_status() == "PAUSED"
    client.post(round_url(round, "cockpit:round-resume"))
    assert study_status() == "ACTIVE"
    actions = [call.params["body"]["action"] for call in prolific_fake.calls("POST /api/v1/studies/{id}/transition/")]
    assert actions == ["PUBLISH", "PAUSE", "START"]
    round.refresh_from_db()
    assert round.status == "open"


def test_pause_expires_the_mturk_hits_and_resume_lists_them_again(client, researcher, project, mturk_fake,
                                                                      dry_run_token):
    round = draft_round(project, budget_cap=Decimal("100"))
    client.force_login(researcher)
    publish_from_page(client, round, "mturk", dry_run_token(round, "mturk"))
    now = datetime.now(timezone.utc).timestamp()
    client.post(round_url(round, "cockpit:round-pause"))
    paused = mturk_fake.calls("UpdateExpirationForHIT")
    assert len(paused) == 9 and all(float(call.params["ExpireAt"]) < now for call in paused)
    client.post(round_url(round, "cockpit:round-resume"))
    resumed = mturk_fake.calls("UpdateExpirationForHIT")[9:]
    assert len(resumed) == 9 and all(float(call.params["ExpireAt"]) > now for call in resumed)
    assert Publication.objects.get().status == Publication.Status.PUBLISHED


def test_cancel_stops_the_published_tasks_too(client, researcher, project, mturk_fake, dry_run_token):
    round = draft_round(project, budget_cap=Decimal("100"))
    client.force_login(researcher)
    publish_from_page(client, round, "mturk", dry_run_token(round, "mturk"))
    assert client.post(round_url(round, "cockpit:round-cancel")).status_code == 302
    round.refresh_from_db()
    assert round.status == "cancelled"
    assert len(mturk_fake.calls("UpdateExpirationForHIT")) == 9
    assert Publication.objects.get().status == Publication.Status.EXPIRED


# --- the task preview ------------------------------------------------------------------------------


def test_preview_renders_the_task_without_an_assignment(client, researcher, project):
    round = draft_round(project)
    item = round.items.select_related("output_a", "output_b").first()
    client.force_login(researcher)
    response = client.get(round_url(round, "cockpit:round-item-preview", item_id=item.pk))
    assert response.status_code == 200
    page = response.content.decode()
    assert item.output_a.text in page and item.output_b.text in page
    assert 'id="submit-button" disabled' in page and "annotation/tasks/pairwise.js" in page
    assert "annotation/work.js" not in page and "action=" not in page.split('id="task-form"')[1].split(">")[0]
    assert not Assignment.objects.exists()


def test_preview_escapes_worker_and_model_text(client, researcher, project):
    round = draft_round(project)
    item = round.items.select_related("output_a").first()
    item.output_a.text = "<script>alert(1)</script>"
    item.output_a.save()
    client.force_login(researcher)
    page = client.get(round_url(round, "cockpit:round-item-preview", item_id=item.pk)).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_preview_of_a_broken_item_is_a_clean_409(client, researcher, project):
    round = draft_round(project)
    item = round.items.first()
    WorkItem.objects.filter(pk=item.pk).update(output_b=None)  # neither a second output nor a reference
    client.force_login(researcher)
    response = client.get(round_url(round, "cockpit:round-item-preview", item_id=item.pk))
    assert response.status_code == 409


def test_paused_round_refuses_workers_on_their_page(client, researcher, project):
    round = draft_round(project)
    open_round(round=round)
    pause_round(round=round)
    worker = make_worker()
    client.force_login(worker.user)
    response = client.get(reverse("annotation:round", args=[round.pk]))
    assert response.status_code == 409
    assert not Assignment.objects.exists()


def test_every_task_type_can_be_previewed(client, researcher, project):
    from annotation import round_builder
    from tests.annotation.factories import make_candidate, make_family, make_instance, make_review_set

    family = make_family(project=project)
    make_instance(family=family, captions=False)
    make_candidate(instance=make_instance(family=family))
    review_set = make_review_set(texts=[f"Review number {rank}." for rank in range(1, 6)], project=project)
    outputs_in(project, instances=1)
    client.force_login(researcher)
    shown = {"instruction_generation": family.seed_instruction, "caption": "Describe scene",
             "verification": "Three shapes.", "pairwise": "alpha says something.", "ranking": "Review number 3."}
    for task_type, source in (("instruction_generation", "families"), ("caption", "awaiting_caption"),
                              ("verification", "reference_candidates"), ("pairwise", "model_outputs"),
                              ("ranking", "review_sets")):
        round, _plan = round_builder.create_round_from_source(
            project=project, created_by=researcher, settings={"name": task_type, "task_type": task_type},
            source=source, params={})
        item = round.items.first()
        response = client.get(round_url(round, "cockpit:round-item-preview", item_id=item.pk))
        assert response.status_code == 200, task_type
        assert shown[task_type] in response.content.decode(), task_type
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("changes, shown", [
    ({"source-sampler": "uniform", "source-count": ""}, "the uniform sampler needs a count"),
    ({"source-models": "nosuchmodel, alpha"}, "no outputs of"),
])
def test_a_source_refusal_is_shown_on_the_builder_form_with_the_input_kept(client, researcher, project, changes,
                                                                             shown):
    outputs_in(project)
    client.force_login(researcher)
    for action in ("preview", "create"):
        response = client.post(new_url(project), builder_data(action=action, **changes))
        assert response.status_code == 400
        page = response.content.decode()
        assert shown in page
        assert 'id="builder-form"' in page and 'value="Pairwise batch"' in page
    assert not CollectionRound.objects.exists()


def test_round_pages_show_yen_without_decimal_places(client, researcher, project):
    from tests.cockpit.results_data import yen_round

    round = yen_round(project)
    client.force_login(researcher)
    html = client.get(reverse("cockpit:round", args=[project.slug, round.pk])).content.decode()
    assert "<th>Reward per task</th><td>30 JPY</td>" in html
    assert "<th>Target hourly wage</th><td>18 JPY</td>" in html
    assert '<td id="round-budget-cap">1000 JPY</td>' in html
    assert "spent 90 JPY" in html
    html = client.get(reverse("cockpit:rounds", args=[project.slug])).content.decode()
    assert "<td>90 JPY</td>" in html


# --- items no eligible worker remains for ------------------------------------------------------------


def stuck_round(project):
    """One item, one worker each, English speakers only: Ann (English) did it and was rejected; Ben
    (no language listed) may not take it."""
    from tests.annotation.factories import make_worker

    round = draft_round(project, workers_per_item=1, qualification_rules={"language_matched": True})
    round.items.exclude(pk=round.items.order_by("position").first().pk).delete()
    open_round(round=round)
    ann = set_worker_languages(worker=make_worker("ann"), languages=["en"])
    ben = make_worker("ben")
    assignment = request_assignment(round=round, worker=ann)
    submit_assignment(assignment_id=assignment.pk, worker=ann, data={"choice": "left"})
    reject_assignment(assignment=Assignment.objects.get(pk=assignment.pk), feedback="Not read.")
    return round, ann, ben


def test_eligible_workers_are_the_ones_the_rules_let_in_and_an_item_is_stuck_when_all_had_it(project):
    from annotation.selectors import eligible_workers, items_without_eligible_worker

    round, ann, ben = stuck_round(project)
    assert [worker.pk for worker in eligible_workers(round=round)] == [ann.pk]
    assert [item.pk for item in items_without_eligible_worker(round=round)] == [round.items.get().pk]
    ben = set_worker_languages(worker=ben, languages=["en"])
    assert items_without_eligible_worker(round=round) == []
    # Work in flight is not stuck: it waits for the worker holding it.
    assert request_assignment(round=round, worker=ben) is not None
    set_worker_languages(worker=ben, languages=[])
    assert items_without_eligible_worker(round=round) == []


def test_an_item_no_eligible_worker_remains_for_is_shown_with_the_actions_that_unblock_it(client, researcher, project):
    round, _ann, ben = stuck_round(project)
    client.force_login(researcher)
    page = client.get(round_url(round)).content.decode()
    assert 'id="stuck-items"' in page and "Items no eligible worker remains for" in page
    assert 'id="stuck-extend"' in page and 'id="stuck-close"' in page and 'id="widen-form"' in page
    assert 'value="language_matched"' in page
    response = client.post(round_url(round, "cockpit:round-widen"), {"rules": ["language_matched"]})
    assert response.status_code == 302
    round.refresh_from_db()
    assert round.qualification_rules == {}
    assert 'id="stuck-items"' not in client.get(round_url(round)).content.decode()
    assert request_assignment(round=round, worker=ben) is not None


def test_widening_refuses_a_rule_the_round_lacks_and_changes_nothing(client, researcher, project):
    round, _ann, _ben = stuck_round(project)
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-widen"), {"rules": ["qualified_only"]})
    assert response.status_code == 400
    with pytest.raises(InvalidTransition, match="no rule qualified_only"):
        widen_eligibility(round=round, rules=["qualified_only"])
    round.refresh_from_db()
    assert round.qualification_rules == {"language_matched": True}


def test_a_dry_run_of_a_complete_round_says_nothing_to_publish_and_offers_no_publish(client, researcher, project):
    from tests.annotation.factories import make_worker

    round = draft_round(project, workers_per_item=1)
    open_round(round=round)
    worker = make_worker()
    while (assignment := request_assignment(round=round, worker=worker)) is not None:
        submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": "left"})
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE
    client.force_login(researcher)
    assert 'id="dry-run-form"' not in client.get(round_url(round)).content.decode()
    response = client.post(round_url(round, "cockpit:round-dry-run"), {"provider": "mturk", "expected_seconds": "60"})
    page = response.content.decode()
    assert response.status_code == 200 and "nothing to publish" in page and 'id="publish-form"' not in page
    assert not Publication.objects.exists()


def test_a_rounds_qualifications_are_shown_in_words_not_as_stored(client, researcher, project):
    round = draft_round(project, qualification_rules={"language_matched": True, "min_approved_tasks": 1,
                                                      "stop_after_failed_checks": 0,
                                                      "min_gold_accuracy_for_approval": 0.8})
    client.force_login(researcher)
    page = client.get(round_url(round)).content.decode()
    shown = re.search(r'<td id="round-qualifications">(.*?)</td>', page).group(1)
    assert "language_matched" not in re.sub(r'title="[^"]*"', "", shown) and "True" not in shown
    assert "only workers who list English among their languages" in shown
    assert "at least 1 approved task in earlier rounds" in shown
    assert "no stop after failed checks" in shown and "approved automatically from 80 % gold accuracy" in shown


def test_the_widening_form_names_each_rule_in_words(client, researcher, project):
    round, _ann, _ben = stuck_round(project)
    client.force_login(researcher)
    page = client.get(round_url(round)).content.decode()
    assert 'value="language_matched"' in page
    assert "only workers who list English among their languages" in page and "language_matched: True" not in page


def test_a_dry_run_the_provider_refuses_is_shown_at_the_publish_form_in_words(client, researcher, project):
    """Prolific refuses a study paying under its minimum with a validation error per field; the
    researcher reads it on the round's page at the form they sent, not as a raw dict on a bare page."""
    round = draft_round(project, reward_per_task=Decimal("0.00"))
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-dry-run"), {"provider": "prolific", "expected_seconds": "60"})
    page = response.content.decode()
    assert response.status_code == 409, page[:2000]  # Prolific's refusal, a conflict with its rules
    form = re.search(r'<form[^>]*id="dry-run-form".*?</form>', page, re.S).group(0)
    assert "reward: Ensure this value is greater than or equal to 1." in form
    assert "{&#x27;reward&#x27;" not in page and "{'reward'" not in page
    assert '<nav class="project-nav"' in page and 'value="prolific" selected' in form
    assert not Publication.objects.exists()


def test_a_stale_dry_run_is_refused_at_the_dry_run_form_with_the_choices_kept(client, researcher, project):
    round = draft_round(project)
    client.force_login(researcher)
    response = client.post(round_url(round, "cockpit:round-publish"),
                           {"provider": "prolific", "expected_seconds": "75", "dry_run": "made-up", "confirm": "on"})
    page = response.content.decode()
    assert response.status_code == 400
    form = re.search(r'<form[^>]*id="dry-run-form".*?</form>', page, re.S).group(0)
    assert "Run the dry run first" in form and 'value="75"' in form and 'value="prolific" selected' in form
    assert '<nav class="project-nav"' in page


def test_a_refusal_no_form_can_show_is_a_cockpit_page_with_the_project_and_a_way_back(client, researcher, project):
    round = draft_round(project)
    cancel_round(round=round)
    client.force_login(researcher)
    came_from = "http://testserver" + round_url(round)
    response = client.post(round_url(round, "cockpit:round-close"), HTTP_REFERER=came_from)
    page = response.content.decode()
    assert response.status_code == 409, page[:1500]
    assert 'role="alert" id="refusal"' in page and '<nav class="project-nav"' in page
    assert f'href="{came_from}" id="back-link"' in page
    # A Referer from elsewhere is no way back: the project's board is.
    response = client.post(round_url(round, "cockpit:round-close"), HTTP_REFERER="https://evil.example/")
    assert f'href="/projects/{project.slug}/" id="back-link"' in response.content.decode()
