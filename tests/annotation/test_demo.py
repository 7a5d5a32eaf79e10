import numpy as np
import pytest
from django.contrib.auth.models import User

from annotation.models import Assignment, CollectionRound
from annotation.permissions import is_local_worker
from annotation.services.engine import request_assignment
from annotation.services.workers import get_or_create_local_worker
from demo.rounds import create_demo_rounds
from tests.llm.fake_embedded import fake_embedded_model  # noqa: F401  (fixture)

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
    worker = get_or_create_local_worker(user=worker_user)
    for round in rounds.values():
        assignment = request_assignment(round=round, worker=worker)
        assert assignment is not None
        assert round.task_type_handler.context(assignment)

    again = create_demo_rounds(researcher=researcher, worker_users=[worker_user])
    assert {k: r.pk for k, r in again.items()} == {k: r.pk for k, r in rounds.items()}
    assert CollectionRound.objects.count() == len(rounds)


def test_demo_rounds_use_existing_demo_data_when_present():
    from demo.data import create_demo_data

    create_demo_data()
    rounds = create_demo_rounds(worker_users=[])
    assert rounds["pairwise"].items.count() >= 2
    assert rounds["ranking_ja"].items.first().review_set.language == "ja"


def test_demo_rounds_are_chained_through_the_visitbench_stages():
    rounds = create_demo_rounds(worker_users=[])
    assert rounds["instruction_generation"].follow_up_round == rounds["caption"]
    assert rounds["caption"].follow_up_round == rounds["verification"]
    assert rounds["verification"].follow_up_round is None


def test_demo_crowd_completes_rounds_so_ratings_and_irr_have_numbers():
    from stats import irr
    from stats.ratings import compute_ratings
    from evaluation.selectors import human_battles, irr_rankings
    from demo.crowd import COMPLETED_ROUNDS, complete_demo_rounds

    worker_user = User.objects.create_user("demo-worker", password="pw-123456")
    rounds = create_demo_rounds(worker_users=[worker_user])
    report = complete_demo_rounds(rounds=rounds)
    # The report counts the workers who submitted something, as the Workers page and a release do.
    submitting = Assignment.objects.filter(worker__user__username__startswith="demo-crowd-",
                                           status=Assignment.Status.SUBMITTED).values("worker").distinct().count()
    assert report.workers == submitting >= 5
    for key in COMPLETED_ROUNDS:
        round = rounds[key]
        assert round.items.filter(completed_at__isnull=True).count() == 0, key
        assert report.completed_items[key].split(" of ")[0] == report.completed_items[key].split(" of ")[1]

    battles = human_battles()
    models = set(battles["model_a"]) | set(battles["model_b"])
    assert len(models) >= 3 and len(battles) >= 100
    for method in ("elo", "bt"):
        result = compute_ratings(battles, method=method)
        assert sorted(result.models) == sorted(models)
        assert np.isfinite(result.rating).all() and result.battles.sum() == 2 * len(battles)

    agreement = irr.agreement(irr_rankings())
    assert int(agreement.kept.sum()) >= 2  # one kept item per language at least
    assert set(irr_rankings()["language"]) == {"en", "ja"}

    # Rounds left open for people to try, with a task for a demo worker.
    worker = get_or_create_local_worker(user=worker_user)
    still_open = [key for key in rounds if key not in COMPLETED_ROUNDS]
    assert still_open
    assert all(request_assignment(round=rounds[key], worker=worker) is not None for key in still_open)

    # A second run finds nothing left to do.
    again = complete_demo_rounds(rounds=rounds)
    assert sum(again.submitted.values()) == 0


def test_load_demo_prints_what_the_crowd_did():
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("load_demo", stdout=out)
    text = out.getvalue()
    assert "Simulated crowd:" in text and "pairwise" in text and "Open for you to try:" in text
    # The tests turn the embedded model off: the loader says no LLM step ran, and why.
    assert "LLM steps: none run." in text and "LLM_EMBEDDED=0" in text
    assert CollectionRound.objects.get(name__endswith="Which response is better?").items.filter(
        completed_at__isnull=True).count() == 0
    # Worker quality is computed for every round the simulated crowd completed, for the Workers page.
    from demo.crowd import COMPLETED_ROUNDS

    completed = CollectionRound.objects.filter(items__completed_at__isnull=False).distinct()
    assert completed.count() == len(COMPLETED_ROUNDS)
    for round in completed:
        crowd = set(round.assignments.counted().values_list("worker", flat=True))
        assert crowd and set(round.worker_quality.values_list("worker", flat=True)) == crowd, round.name


@pytest.mark.django_db(transaction=True)  # the step run is carried out when the loader's transaction commits
def test_load_demo_says_what_its_llm_step_wrote_in_words_that_read_right_for_one(fake_embedded_model):
    import io
    import re

    from django.core.management import call_command

    out = io.StringIO()
    call_command("load_demo", stdout=out)
    [line] = [line for line in out.getvalue().splitlines() if line.startswith("LLM step")]
    # The model is loaded before the run, so the run's call times the answer only.
    assert fake_embedded_model.events[:2] == ["load", "generate"]
    assert re.search(r"succeeded in \d+\.\d s, after \d+\.\d s loading the model\. ", line), line
    assert "1 reference candidate written for the 1 instance awaiting one; 1 verification item in round " in line
    for wrong in ("1 instances", "1 reference candidates", "1 items", "1 requests"):
        assert wrong not in line, line


def test_make_demo_gives_the_server_address_as_the_site_base_url():
    import subprocess

    from django.conf import settings

    commands = subprocess.run(["make", "-n", "demo", "HOST=10.1.2.3", "PORT=8123"], cwd=settings.BASE_DIR,
                              capture_output=True, text=True, check=True).stdout.splitlines()
    for command in ("migrate", "load_demo", "runserver 10.1.2.3:8123"):
        [line] = [line for line in commands if f"manage.py {command}" in line]
        assert "SITE_BASE_URL=http://10.1.2.3:8123 " in line, line
