import pytest
from django.contrib.auth.models import User

from annotation import services
from annotation.demo import create_demo_rounds
from annotation.models import CollectionRound
from annotation.permissions import is_local_worker

pytestmark = pytest.mark.django_db


def test_demo_rounds_cover_every_type_and_can_be_worked_on():
    researcher = User.objects.create_user("researcher", is_staff=True)
    worker_user = User.objects.create_user("demo-worker", password="pw-123456")
    rounds = create_demo_rounds(researcher=researcher, worker_users=[worker_user])
    assert {r.task_type for r in rounds.values()} == {
        "instruction_generation", "caption", "verification", "pairwise", "ranking",
    }
    assert rounds["ranking_ja"].language == "ja"
    assert all(r.status == CollectionRound.Status.OPEN for r in rounds.values())
    assert is_local_worker(worker_user)
    worker = services.get_or_create_local_worker(user=worker_user)
    for round in rounds.values():
        assignment = services.request_assignment(round=round, worker=worker)
        assert assignment is not None
        assert round.task_type_handler.context(assignment)

    again = create_demo_rounds(researcher=researcher, worker_users=[worker_user])
    assert {k: r.pk for k, r in again.items()} == {k: r.pk for k, r in rounds.items()}
    assert CollectionRound.objects.count() == len(rounds)


def test_demo_rounds_use_existing_demo_data_when_present():
    from datasets_app.demo import create_demo_data

    create_demo_data()
    rounds = create_demo_rounds(worker_users=[])
    assert rounds["pairwise"].items.count() >= 2
    assert rounds["ranking_ja"].items.first().review_set.language == "ja"


def test_demo_rounds_are_chained_through_the_visitbench_stages():
    rounds = create_demo_rounds(worker_users=[])
    assert rounds["instruction_generation"].follow_up_round == rounds["caption"]
    assert rounds["caption"].follow_up_round == rounds["verification"]
    assert rounds["verification"].follow_up_round is None
