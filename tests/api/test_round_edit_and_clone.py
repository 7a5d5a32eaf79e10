"""The API edits a draft round's settings (PATCH, the creation serializer's fields and limits) and
clones any round into a new draft (POST clone); refusals change nothing."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.forms.models import model_to_dict

from annotation.models import CollectionRound
from annotation.services.rounds import add_items, create_round, open_round
from datasets_app.models import ModelOutput
from projects.services import create_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(study, researcher, tmp_path):
    from datasets_app.model_outputs import import_predictions

    from .conftest import predictions_csv

    import_predictions(path=predictions_csv(tmp_path / "predictions.csv"))
    round = create_round(name="API round", task_type="pairwise", project=study, created_by=researcher)
    pairs = []
    for instance in study.families.get(name="Counting").instances.all():
        outputs = {o.model_name: o for o in ModelOutput.objects.filter(instance=instance)}
        pairs.append((outputs["model-good"], outputs["model-bad"]))
    add_items(round=round, targets=pairs, gold_answers={0: {"winner": "a"}})
    return round


def snapshot(round):
    round.refresh_from_db()
    return model_to_dict(round), list(round.items.values_list("pk", "output_a_id", "output_b_id"))


def test_a_round_made_with_reward_zero_is_fixed_with_patch(draft, owner_api):
    assert draft.reward_per_task == Decimal("0.00")
    response = owner_api.patch(f"/api/rounds/{draft.pk}/", {"reward_per_task": "0.25", "budget_cap": "10.00",
                                                            "name": "Fixed"}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["reward_per_task"], body["budget_cap"], body["name"], body["status"]) == ("0.25", "10.00", "Fixed",
                                                                                            "draft")
    draft.refresh_from_db()
    assert (draft.reward_per_task, draft.budget_cap, draft.workers_per_item) == (Decimal("0.25"), Decimal("10.00"), 1)


@pytest.mark.parametrize("body, field", [
    ({"reward_per_task": "-1"}, "reward_per_task"),
    ({"workers_per_item": 0}, "workers_per_item"),
    ({"time_limit_seconds": 5}, "time_limit_seconds"),
    ({"task_type": "ranking"}, "task_type"),
    ({"project": "elsewhere"}, "project"),
    ({"currency": "JPY", "reward_per_task": "0.50"}, "reward_per_task"),
    ({"qualification_rules": {"bogus": 1}}, "qualification_rules"),
    ({}, None),
])
def test_bad_settings_are_refused_with_the_creation_limits_and_nothing_changes(draft, owner_api, body, field):
    before = snapshot(draft)
    response = owner_api.patch(f"/api/rounds/{draft.pk}/", body, format="json")
    assert response.status_code == 400, response.json()
    if field:
        assert field in response.json() or field in response.json().get("errors", {})
    assert snapshot(draft) == before


def test_a_round_that_is_not_a_draft_is_refused_409_and_unchanged(draft, owner_api):
    open_round(round=draft)
    before = snapshot(draft)
    response = owner_api.patch(f"/api/rounds/{draft.pk}/", {"reward_per_task": "0.25"}, format="json")
    assert response.status_code == 409 and "cannot edit a round that is open" in response.json()["detail"]
    assert snapshot(draft) == before
    assert owner_api.put(f"/api/rounds/{draft.pk}/", {"name": "x"}, format="json").status_code == 405


def test_clone_copies_settings_and_items_into_a_new_draft(draft, owner_api, researcher):
    owner_api.patch(f"/api/rounds/{draft.pk}/", {"reward_per_task": "0.20", "workers_per_item": 3}, format="json")
    open_round(round=draft)
    response = owner_api.post(f"/api/rounds/{draft.pk}/clone/", {"name": "Again"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    copy = CollectionRound.objects.get(pk=body["id"])
    assert (body["status"], body["name"], body["reward_per_task"], body["workers_per_item"]) == ("draft", "Again",
                                                                                                  "0.20", 3)
    assert copy.created_by == researcher and copy.project == draft.project
    items = lambda r: list(r.items.order_by("position").values_list(  # noqa: E731
        "output_a_id", "output_b_id", "is_gold", "gold_answer"))
    assert items(copy) == items(draft) and len(items(copy)) == 2
    unnamed = owner_api.post(f"/api/rounds/{draft.pk}/clone/", {}, format="json")
    assert unnamed.status_code == 201 and unnamed.json()["name"] == "API round (copy)"


def test_collaborators_outsiders_and_forged_ids_change_nothing(draft, collaborator_api, outsider_api, owner_api,
                                                               make_researcher):
    before, count = snapshot(draft), CollectionRound.objects.count()
    assert collaborator_api.patch(f"/api/rounds/{draft.pk}/", {"name": "x"}, format="json").status_code == 403
    assert collaborator_api.post(f"/api/rounds/{draft.pk}/clone/", {}, format="json").status_code == 403
    assert outsider_api.patch(f"/api/rounds/{draft.pk}/", {"name": "x"}, format="json").status_code == 404
    assert outsider_api.post(f"/api/rounds/{draft.pk}/clone/", {}, format="json").status_code == 404
    other = create_round(name="Theirs", task_type="pairwise",
                         project=create_project(name="Other", slug="other", owner=make_researcher("olga")))
    for bad in (other.pk, 2**63, "abc", -1):
        assert owner_api.patch(f"/api/rounds/{bad}/", {"name": "x"}, format="json").status_code == 404
        assert owner_api.post(f"/api/rounds/{bad}/clone/", {}, format="json").status_code == 404
    assert snapshot(draft) == before and CollectionRound.objects.count() == count + 1
    other.refresh_from_db()
    assert other.name == "Theirs"
