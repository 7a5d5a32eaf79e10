"""Each task type checks the targets of its items: in the services, in the admin, and before a page
is shown (an item written past the checks is refused cleanly and given back)."""
from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation import selectors
from annotation.models import Assignment, WorkItem
from annotation.services.engine import request_assignment
from annotation.services.rounds import add_items, open_round
from annotation.services.submissions import submit_assignment

from .factories import (
    make_candidate,
    make_family,
    make_instance,
    make_outputs,
    make_reference,
    make_review_set,
    make_round,
    make_worker,
    make_worker_user,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("admin", password="admin-pass-123"))
    return client


def item_form(round, **targets) -> dict:
    data = {"round": round.pk, "position": 50, "gold_answer": "{}"}
    data.update({name: target.pk for name, target in targets.items()})
    return data


def add_in_admin(admin_client, round, **targets):
    return admin_client.post(reverse("admin:annotation_workitem_add"), item_form(round, **targets))


def form_errors(response) -> dict:
    form = response.context["adminform"].form
    return {field: list(errors) for field, errors in form.errors.items()}


def test_admin_refuses_a_pair_of_outputs_of_different_instances(admin_client):
    first, second = make_instance(), make_instance()
    output_a = make_outputs(instance=first)[0]
    output_b = make_outputs(instance=second)[1]
    round = make_round(task_type="pairwise", targets=[make_outputs(instance=make_instance())], open=False)
    response = add_in_admin(admin_client, round, output_a=output_a, output_b=output_b)
    assert response.status_code == 200
    assert "same instance" in " ".join(form_errors(response)["output_b"])
    assert WorkItem.objects.filter(round=round).count() == 1


@pytest.mark.parametrize(
    "task_type, build, field",
    [
        ("pairwise", lambda: {"family": make_family()}, "family"),  # a pairwise item with only a family
        ("caption", lambda: {"candidate": make_candidate()}, "candidate"),
        ("verification", lambda: {"instance": make_instance()}, "instance"),
        ("ranking", lambda: {"family": make_family()}, "family"),
        ("instruction_generation", lambda: {"review_set": make_review_set()}, "review_set"),
    ],
)
def test_admin_refuses_a_target_that_does_not_fit_the_round(admin_client, task_type, build, field):
    round = make_round(task_type=task_type, targets=[], open=False)
    response = add_in_admin(admin_client, round, **build())
    assert response.status_code == 200
    assert field in form_errors(response)
    assert not WorkItem.objects.filter(round=round).exists()


def test_admin_refuses_an_item_with_no_target_and_a_ranking_set_in_another_language(admin_client):
    round = make_round(task_type="ranking", targets=[], open=False, language="en")
    response = add_in_admin(admin_client, round)
    assert "review_set" in form_errors(response)
    response = add_in_admin(admin_client, round, review_set=make_review_set(language="ja"))
    assert "is in ja" in " ".join(form_errors(response)["review_set"])
    assert not WorkItem.objects.filter(round=round).exists()


def test_admin_derives_side_names_so_battles_have_model_names(admin_client):
    instance = make_instance()
    output_a, output_b = make_outputs(instance=instance, models=("alpha", "beta"))
    reference = make_reference(instance=instance)
    round = make_round(task_type="pairwise", targets=[], open=False)
    response = add_in_admin(admin_client, round, output_a=output_a, output_b=output_b)
    assert response.status_code == 302, form_errors(response)
    response = admin_client.post(reverse("admin:annotation_workitem_add"),
                                 {**item_form(round, output_a=output_b, reference=reference), "position": 51})
    assert response.status_code == 302
    names = list(WorkItem.objects.filter(round=round).order_by("position").values_list("side_a_name", "side_b_name"))
    assert names == [("alpha", "beta"), ("beta", settings.ANNOTATION_REFERENCE_SIDE_NAME)]
    # The stored names feed the battles.
    open_round(round=round)
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": "left"})
    battle = selectors.pairwise_battles(round).iloc[0]
    assert {battle.model_a, battle.model_b} == {"alpha", "beta"}


def test_services_refuse_the_same_bad_targets():
    output_a = make_outputs(instance=make_instance())[0]
    output_b = make_outputs(instance=make_instance())[1]
    round = make_round(task_type="pairwise", targets=[], open=False)
    with pytest.raises(ValidationError, match="same instance"):
        add_items(round=round, targets=[(output_a, output_b)])
    with pytest.raises(ValidationError, match="two different outputs"):
        add_items(round=round, targets=[(output_a, output_a)])
    with pytest.raises(ValidationError, match="output's instance"):
        add_items(round=round, targets=[(output_a, make_reference(instance=make_instance()))])
    assert not round.items.exists()


def break_item(item: WorkItem, **columns) -> None:
    """Write past every check, as a raw database edit would."""
    WorkItem.objects.filter(pk=item.pk).update(**columns)


def test_a_broken_stored_item_is_never_handed_out():
    instance = make_instance()
    round = make_round(task_type="pairwise", targets=[make_outputs(instance=instance)])
    other = make_outputs(instance=make_instance(), models=("gamma", "delta"))[0]
    break_item(round.items.get(), output_b=other)  # a pair across two instances
    assert request_assignment(round=round, worker=make_worker()) is None


def test_a_page_whose_item_broke_is_refused_cleanly_and_given_back(client):
    instance = make_instance()
    round = make_round(task_type="caption", targets=[instance, make_instance()])
    user = make_worker_user()
    client.force_login(user)
    first = client.get(reverse("annotation:round", args=[round.pk]))
    assert first.status_code == 200
    assignment = Assignment.objects.get(round=round)
    # The item now points at a reference candidate instead of its instance: not a caption item any more.
    break_item(assignment.item, instance=None, candidate=make_candidate())
    refused = client.get(reverse("annotation:round", args=[round.pk]))
    assert refused.status_code == 409
    assert "given back" in refused.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.RETURNED
    # The next visit gets the next (sound) item, not the same failure.
    again = client.get(reverse("annotation:round", args=[round.pk]))
    assert again.status_code == 200
    assert Assignment.objects.get(round=round, status=Assignment.Status.ASSIGNED).item.position == 1


def test_the_api_refuses_a_broken_item_with_409_json(client):
    review_set = make_review_set()
    round = make_round(task_type="ranking", targets=[review_set])
    user = make_worker_user()
    client.force_login(user)
    url = reverse("annotation-api:next", args=[round.pk])
    assert client.post(url).status_code == 200
    assignment = Assignment.objects.get(round=round)
    Assignment.objects.filter(pk=assignment.pk).update(presentation={})  # lost its review order
    response = client.post(url)
    assert response.status_code == 409 and "given back" in response.json()["detail"]
    assert client.post(url).json()["assignment"] is None  # nothing else in the round


def test_an_answer_to_a_broken_item_is_refused_not_a_500(client):
    round = make_round(task_type="caption", targets=[make_instance()])
    client.force_login(make_worker_user())
    assignment = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    break_item(WorkItem.objects.get(pk=round.items.get().pk), instance=None, family=make_family())
    response = client.post(assignment["submit_url"], {"captions": ["A red square."]}, content_type="application/json")
    assert response.status_code == 409 and "given back" in response.json()["detail"]
    assert Assignment.objects.get(pk=assignment["id"]).status == Assignment.Status.ASSIGNED
