"""A third provider is one package plus one registry line (#30): the researcher publishes a round on
it through the API, its workers arrive on its page and are checked against its platform, submit,
are approved and paid there, and the round completes; its page is rate-limited as it declares."""
from __future__ import annotations

import importlib
import re
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import clear_url_caches, reverse
from rest_framework.test import APIClient

from annotation.models import Assignment, CollectionRound
from providers.models import Publication
from providers.registry import PROVIDERS
from tests.annotation.factories import make_family, make_instance, make_outputs, make_round
from tests.cockpit.conftest import make_researcher, project, researcher  # noqa: F401

from . import platform
from .provider import ThirdProvider

pytestmark = pytest.mark.django_db


def _mount_provider_pages() -> None:
    """Django reads URL modules once; mount the registry's providers again (a provider registered at
    run time has pages only after this, as one listed in providers/registry.py has from the start)."""
    import crowdbench.urls
    import providers.urls

    importlib.reload(providers.urls)
    importlib.reload(crowdbench.urls)
    clear_url_caches()


@pytest.fixture
def third_crowd(monkeypatch):
    monkeypatch.setattr(platform, "PLATFORM", platform.Platform())
    try:
        with PROVIDERS.registered(ThirdProvider):  # the one registry line
            _mount_provider_pages()
            yield platform.PLATFORM
    finally:
        _mount_provider_pages()


def arrive(*, round, place) -> Client:
    """A worker of the platform follows the task link to our page."""
    return Client().get(reverse("providers:third:task", args=[round.pk]),
                        {"worker": place.worker_id, "place": place.id, "task": place.task_id})


def submit(page) -> dict:
    html = page.content.decode()
    token = re.search(r'data-task-token="([^"]+)"', html).group(1)
    action = re.search(r'<form id="task-form"[^>]*action="([^"]+)"', html, re.S).group(1)
    saved = Client().post(action, {"choice": "left"}, content_type="application/json", HTTP_X_TASK_TOKEN=token)
    assert saved.status_code == 201, saved.content
    return saved.json()


def test_a_round_runs_on_a_third_provider_through_the_researchers_path(third_crowd, project, researcher):
    family = make_family(project=project)
    targets = [tuple(make_outputs(instance=make_instance(family=family))) for _ in range(2)]
    round = make_round(task_type="pairwise", targets=targets, workers_per_item=2, open=False, project=project,
                       created_by=researcher, reward_per_task=Decimal("0.50"))
    # The cockpit offers it for publishing, next to the others, as the registry lists it.
    cockpit = Client()
    cockpit.force_login(researcher)
    page = cockpit.get(reverse("cockpit:round", args=[project.slug, round.pk])).content.decode()
    assert '<option value="third">Third crowd</option>' in page and '<option value="local"' not in page
    api = APIClient()
    api.force_authenticate(researcher)

    published = api.post(reverse("api:round-publish", args=[round.pk]), {"provider": "third"}, format="json")
    assert published.status_code == 200, published.content
    assert published.json()["tasks_created"] == 4
    task_id = Publication.objects.get(round=round, provider="third").external_id
    assert third_crowd.tasks[task_id]["places"] == 4

    # Someone who holds no place on the platform is refused before anything is reserved.
    stranger = arrive(round=round, place=platform.Place(id="P999", task_id=task_id, worker_id="W-stranger"))
    assert stranger.status_code == 403 and not Assignment.objects.filter(round=round).exists()

    for number in range(2):
        for _task in range(2):
            place = third_crowd.take_place(task_id=task_id, worker_id=f"W{number}")
            page = arrive(round=round, place=place)
            assert page.status_code == 200 and b'data-provider="third"' in page.content
            assert submit(page)["status"] == "submitted"
            third_crowd.hand_in(place.id)
    submissions = Assignment.objects.filter(round=round)
    assert submissions.count() == 4
    assert set(submissions.values_list("confirmation", flat=True)) == {Assignment.Confirmation.CONFIRMED}

    reviewed = api.post(reverse("api:submission-review"),
                        {"ids": list(submissions.values_list("pk", flat=True)), "decision": "approve"}, format="json")
    assert reviewed.status_code == 200 and len(reviewed.json()["done"]) == 4, reviewed.content
    assert sorted(third_crowd.paid) == [("W0", Decimal("0.50"), "reward")] * 2 + [("W1", Decimal("0.50"), "reward")] * 2
    assert {place.status for place in third_crowd.places.values()} == {"approved"}
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE
    assert api.get(reverse("api:round-detail", args=[round.pk])).json()["status"] == "complete"


def test_the_third_providers_page_is_rate_limited_as_it_declares(third_crowd, settings):
    limits = {name: dict(rule) for name, rule in settings.RATE_LIMITS.items()}
    limits["task_request"].update(per_address="2/h")
    settings.RATE_LIMITS = limits
    client = Client()
    url = reverse("providers:third:task", args=[1])
    assert [client.get(url).status_code for _ in range(3)] == [404, 404, 429]
