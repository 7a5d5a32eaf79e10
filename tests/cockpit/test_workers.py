"""The cockpit's worker list and worker page: scoping, numbers, block and qualify for owners."""
import pytest
from django.urls import reverse

from annotation.errors import NotQualified
from annotation.models import Qualification, Worker
from annotation.services.confirmation import record_confirmation
from annotation.services.engine import request_assignment
from providers import services as provider_services
from providers.models import Publication
from quality.services import recompute_round_quality
from tests.annotation.factories import make_instance, make_outputs, make_round, make_worker
from tests.quality.rounds import answer_all, side_choice

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db

RAW_MTURK_ID = "A2RAWMTURKID77"


@pytest.fixture
def judged(project):
    """A project round with a gold pair: two local workers and one MTurk worker (who fails the gold)."""
    pairs = [tuple(make_outputs(instance=make_instance())) for _ in range(3)]
    round = make_round(task_type="pairwise", targets=pairs, workers_per_item=3, project=project,
                       gold_answers={2: {"winner": "a"}})
    locals_ = [make_worker("careful-ann"), make_worker("careful-bo")]
    turker = provider_services.get_or_create_provider_worker(provider="mturk", external_id=RAW_MTURK_ID)

    def answer(worker, assignment):
        return side_choice(assignment, "b" if worker == turker else "a")

    done = answer_all(round, [*locals_, turker], answer)
    for assignment in done:
        if assignment.worker == turker:
            record_confirmation(assignment=assignment, confirmation="confirmed")
    recompute_round_quality(round=round)
    return round, locals_, turker


def signed_in(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


def test_the_list_shows_workers_by_label_with_their_numbers(client, researcher, project, judged):
    round, (ann, _bo), turker = judged
    page = signed_in(client, researcher).get(reverse("cockpit:workers", args=[project.slug]))
    text = page.content.decode()
    assert page.status_code == 200
    assert "careful-ann" in text and f"mturk worker #{turker.pk}" in text
    assert RAW_MTURK_ID not in text
    detail = client.get(reverse("cockpit:worker", args=[project.slug, turker.pk])).content.decode()
    assert RAW_MTURK_ID not in detail
    assert "0 % (0/1)" in detail  # failed the one gold pair
    assert "0 % (2)" in detail  # outvoted on both real pairs
    ann_page = client.get(reverse("cockpit:worker", args=[project.slug, ann.pk])).content.decode()
    assert "100 % (1/1)" in ann_page
    # Leave-one-out: the other two votes on each real pair split, so none of hers is scored.
    assert '<dd id="agreement">—</dd>' in ann_page
    assert ann_page.count("passed") >= 1 and round.name in ann_page


def test_other_projects_and_their_workers_are_not_found(client, make_researcher, project, judged):
    _round, (ann, _bo), _turker = judged
    outsider = make_researcher("eve")
    client = signed_in(client, outsider)
    assert client.get(reverse("cockpit:workers", args=[project.slug])).status_code == 404
    assert client.get(reverse("cockpit:worker", args=[project.slug, ann.pk])).status_code == 404
    from projects.services import create_project

    create_project(name="Other", slug="other", owner=outsider)
    # A worker of another project's rounds is not found under this one.
    assert client.get(reverse("cockpit:worker", args=["other", ann.pk])).status_code == 404
    assert client.post(reverse("cockpit:worker_block", args=["other", ann.pk]), {"reason": "x"}).status_code == 404


def test_collaborators_see_but_may_not_block_or_qualify(client, collaborator, project, judged):
    _round, (ann, _bo), _turker = judged
    client = signed_in(client, collaborator)
    page = client.get(reverse("cockpit:worker", args=[project.slug, ann.pk])).content.decode()
    assert "careful-ann" in page and "Block" not in page
    assert client.post(reverse("cockpit:worker_block", args=[project.slug, ann.pk]),
                       {"reason": "spam"}).status_code == 403
    assert client.post(reverse("cockpit:worker_qualify", args=[project.slug, ann.pk])).status_code == 403
    assert client.post(reverse("cockpit:workers_recompute", args=[project.slug])).status_code == 403
    ann.refresh_from_db()
    assert not ann.is_blocked and not Qualification.objects.exists()


def test_an_owner_blocks_through_the_provider_and_a_bad_reason_changes_nothing(client, researcher, project, judged):
    _round, (ann, _bo), _turker = judged
    client = signed_in(client, researcher)
    url = reverse("cockpit:worker_block", args=[project.slug, ann.pk])
    response = client.post(url, {"reason": "   "}, follow=True)
    assert response.status_code == 200 and "Not blocked" in response.content.decode()
    ann.refresh_from_db()
    assert not ann.is_blocked
    assert client.get(url).status_code == 405
    response = client.post(url, {"reason": "Random clicking on gold pairs."}, follow=True)
    assert "careful-ann is blocked." in response.content.decode()
    ann.refresh_from_db()
    assert ann.is_blocked


def test_an_owner_qualifies_a_worker_for_the_projects_qualified_rounds(client, researcher, project, judged):
    _round, (ann, bo), _turker = judged
    gated = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=make_instance()))],
                       project=project, qualification_rules={"qualified_only": True})
    with pytest.raises(NotQualified):
        request_assignment(round=gated, worker=ann)
    client = signed_in(client, researcher)
    response = client.post(reverse("cockpit:worker_qualify", args=[project.slug, ann.pk]), follow=True)
    assert "careful-ann is qualified for this project" in response.content.decode()
    assert Qualification.objects.get(worker=ann, project=project).granted_by == researcher
    assert request_assignment(round=gated, worker=ann) is not None
    with pytest.raises(NotQualified):
        request_assignment(round=gated, worker=bo)


def test_recompute_button_stores_the_numbers(client, researcher, project, judged):
    round, _locals, _turker = judged
    round.worker_quality.all().delete()
    response = signed_in(client, researcher).post(reverse("cockpit:workers_recompute", args=[project.slug]),
                                                  follow=True)
    assert "Worker quality recomputed for 1 rounds." in response.content.decode()
    assert round.worker_quality.count() == 3


def test_qualifying_an_mturk_worker_grants_the_projects_qualification_type(project, judged, settings, monkeypatch):
    from fakes.mturk import FakeMTurkServer
    from providers.mturk.provider import MTurkProvider

    _round, _locals, turker = judged
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    settings.MTURK_ENVIRONMENT = "sandbox"
    settings.PROVIDERS_RETRY_PAUSE_SECONDS = 0
    with FakeMTurkServer(seed=3) as fake:
        settings.MTURK_ENDPOINT_URL = fake.url
        type_id = MTurkProvider(retry_pause=0)._call(
            "create_qualification_type", Name="Judges", Description="Judges of pairs",
            QualificationTypeStatus="Active")["QualificationType"]["QualificationTypeId"]
        Publication.objects.create(round=_round, provider="mturk", details={
            "options": {"qualification_type_id": type_id, "qualification_min_score": 80}})
        granted = provider_services.qualify_worker(worker=turker, project=project)
        assert granted == [type_id]
        call = fake.calls("AssociateQualificationWithWorker")[0].params
        assert call["WorkerId"] == RAW_MTURK_ID and call["IntegerValue"] == 80
    assert Worker.objects.get(pk=turker.pk).qualifications.filter(project=project).exists()


def test_the_history_numbers_items_from_1_and_links_its_rounds(client, researcher, project, judged):
    import re

    round, (ann, _bo), _turker = judged
    detail = signed_in(client, researcher).get(reverse("cockpit:worker", args=[project.slug, ann.pk])).content.decode()
    history = detail.split('id="history"')[1]
    round_link = f'<a href="{reverse("cockpit:round", args=[project.slug, round.pk])}">{round.name}</a>'
    assert round_link in history and round_link in detail.split('id="history"')[0]  # per round, too
    numbers = sorted(int(n) for n in re.findall(rf"{re.escape(round_link)}</td><td>(\d+)</td>", history))
    assert numbers == [item.number for item in round.items.order_by("position")] == [1, 2, 3]
    round_page = client.get(reverse("cockpit:round", args=[project.slug, round.pk])).content.decode()
    assert "<tr><td>1</td>" in round_page and "<tr><td>0</td>" not in round_page


def test_a_round_without_gold_shows_a_dash_not_0_of_0(client, researcher, project):
    pairs = [tuple(make_outputs(instance=make_instance())) for _ in range(2)]
    round = make_round(task_type="pairwise", targets=pairs, workers_per_item=1, project=project)
    worker = make_worker("plain-pat")
    answer_all(round, [worker], lambda _worker, assignment: side_choice(assignment, "a"))
    recompute_round_quality(round=round)
    detail = signed_in(client, researcher).get(reverse("cockpit:worker", args=[project.slug, worker.pk])).content.decode()
    row = detail.split(f">{round.name}</a></td>")[1].split("</tr>")[0]
    assert "0/0" not in row and "<td>—</td>" in row
