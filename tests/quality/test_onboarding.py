"""Onboarding: a qualifying round of gold items, with feedback after each answer, that a worker must
pass before the project's qualified-only rounds give them tasks."""
import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client

from annotation.eligibility import qualifying_result
from annotation.errors import NotQualified
from annotation.models import Qualification
from annotation.services.engine import request_assignment
from annotation.services.rounds import create_round
from annotation.services.submissions import submit_assignment
from annotation.services.workers import get_or_create_local_worker, grant_qualification
from projects.services import create_project
from tests.annotation.factories import make_instance, make_outputs, make_round, make_worker_user

from .rounds import side_choice

pytestmark = pytest.mark.django_db


@pytest.fixture
def rounds():
    owner = User.objects.create_user("owner")
    project = create_project(name="Onboarded", slug="onboarded", owner=owner)
    practice = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=make_instance())) for _ in range(3)],
                          workers_per_item=20, project=project, gold_answers={n: {"winner": "a"} for n in range(3)},
                          qualification_rules={"qualifies_for_project": 0.66, "stop_after_failed_checks": 0})
    real = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=make_instance()))],
                      workers_per_item=5, project=project, qualification_rules={"qualified_only": True})
    return practice, real


def answer_on_page(client, round, wanted):
    """Load the round's page, answer its task through the API the page posts to, load the page again."""
    page = client.get(f"/work/rounds/{round.pk}/")
    assignment = page.context["assignment"]
    response = client.post(f"/api/work/assignments/{assignment.pk}/submit/", side_choice(assignment, wanted),
                           content_type="application/json")
    assert response.status_code == 201
    return client.get(f"/work/rounds/{round.pk}/").content.decode(), assignment


def test_a_worker_who_passes_the_qualifying_round_gets_real_tasks(rounds):
    practice, real = rounds
    user = make_worker_user()
    client = Client()
    client.force_login(user)
    assert client.get(f"/work/rounds/{real.pk}/").status_code == 403
    page, first = answer_on_page(client, practice, "b")
    side = "left" if first.presentation["left"] == "a" else "right"
    assert f"Your answer was not right: the {side} response was the better one." in page
    page, _second = answer_on_page(client, practice, "a")
    assert "Your answer was right." in page and "qualification" not in page
    page, _third = answer_on_page(client, practice, "a")
    assert "You passed the qualification (2 of 3 right)" in page
    qualification = Qualification.objects.get(worker__user=user)
    assert qualification.source == Qualification.Source.QUALIFYING_ROUND and qualification.project == real.project
    assert client.get(f"/work/rounds/{real.pk}/").context["assignment"].round == real


def test_a_worker_who_fails_it_stays_out(rounds):
    practice, real = rounds
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    for wanted in ("b", "b", "a"):
        assignment = request_assignment(round=practice, worker=worker)
        submit_assignment(assignment_id=assignment.pk, worker=worker, data=side_choice(assignment, wanted))
    assert qualifying_result(round=practice, worker=worker) == {
        "answers": 3, "passed": 1, "finished": True, "qualified": False}
    client = Client()
    client.force_login(user)
    assert "You did not pass the qualification (1 of 3 right)" in client.get(f"/work/rounds/{practice.pk}/").content.decode()
    with pytest.raises(NotQualified, match="passed its project's qualification"):
        request_assignment(round=real, worker=worker)
    assert not Qualification.objects.exists()


def test_other_rounds_give_no_feedback_and_the_rule_is_checked(rounds):
    _practice, real = rounds
    other = make_worker_user()
    worker = get_or_create_local_worker(user=other)
    grant_qualification(worker=worker, project=real.project, source=Qualification.Source.OWNER)
    page, _assignment = answer_on_page(_logged_in(other), real, "a")
    assert "qualifying-feedback" not in page
    with pytest.raises(ValidationError, match="qualifies_for_project"):
        create_round(name="bad", task_type="pairwise", qualification_rules={"qualifies_for_project": 0})


def _logged_in(user):
    client = Client()
    client.force_login(user)
    return client
