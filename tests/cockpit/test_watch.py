"""Watching rounds: the numbers of the round and project watch against the data and the cores, the
pages, their JSON and who may see them."""
import statistics
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.models import Assignment, CollectionRound
from annotation.task_types import REGISTRY
from annotation.task_types.base import TaskType
from annotation.watch import project_watch, round_watch
from evaluation.selectors import irr_rankings
from projects.services import create_project
from stats import irr
from stats.pairwise_agreement import majority_vote_arrays

from .results_data import REWARD, SECONDS_PER_TASK, judged_project, yen_round

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(project):
    return judged_project(project)


def counted(round):
    return Assignment.objects.counted().filter(round=round)


def test_round_watch_numbers_on_known_data(data):
    round = data.pairwise
    watch = round_watch(round=round)
    # 4 instances x 3 pairs, three workers each; the third left the last item, which is in flight.
    assert (watch["items"], watch["items_completed"]) == (12, 11)
    assert watch["judgments_counted"] == 35 == counted(round).count()
    assert watch["in_flight"] == 1
    assert watch["spent"] == REWARD * 35 and watch["budget_cap"] == Decimal("20.00")
    assert watch["budget_left"] == Decimal("20.00") - REWARD * 35
    # The median task took the middle worker's 90 s: 0.50 per 90 s is 20.00 an hour, above the 18.00 target.
    assert watch["median_seconds"] == statistics.median(SECONDS_PER_TASK * 12) == 90
    assert watch["effective_hourly_wage"] == Decimal("20.00") and watch["wage_meets_target"] is True
    # Throughput: every counted submission in one hourly bin, bins an hour apart.
    hours = [row["hour"] for row in watch["throughput"]]
    assert sum(row["submissions"] for row in watch["throughput"]) == 35
    assert all((later - earlier).total_seconds() == 3600 for earlier, later in zip(hours, hours[1:]))
    submitted = sorted(counted(round).values_list("submitted_at", flat=True))
    assert hours[0] == submitted[0].replace(minute=0, second=0, microsecond=0)


def test_pairwise_agreement_is_the_majority_vote_core(data):
    votes = list(counted(data.pairwise).values_list("item_id", "result", "worker_id"))
    expected = majority_vote_arrays([v[0] for v in votes], [v[1]["winner"] for v in votes], [v[2] for v in votes])
    agreement = round_watch(round=data.pairwise)["agreement"]
    assert agreement["levels"] == [{"level": str(level), "count": int(count)}
                                   for level, count in expected.level_counts().items() if count]
    assert sum(level["count"] for level in agreement["levels"]) == 12
    measures = {m["label"]: m["value"] for m in agreement["measures"]}
    workers = expected.workers
    assert measures["Votes agreeing with the majority"] == pytest.approx(
        workers["agreements"].sum() / workers["scored_votes"].sum())
    assert measures["Pairs judged"] == 12


def test_ranking_agreement_is_the_irr_core(data):
    agreement = round_watch(round=data.ranking)["agreement"]
    result = irr.agreement(irr_rankings(round=data.ranking))
    measures = {m["label"]: m["value"] for m in agreement["measures"]}
    assert measures["Review sets ranked"] == 2
    assert measures["Review sets with two or more rankings"] == int(result.evaluable.sum()) == 2
    # Two of the three workers rank in the same order: each set's best pair agrees fully.
    assert measures["Mean best-pair rho"] == pytest.approx(float(result.best_rho.mean())) == pytest.approx(1.0)


def test_verification_agreement_is_the_majority_of_outcomes(project):
    from annotation.services.engine import request_assignment
    from annotation.services.submissions import submit_assignment
    from tests.annotation.factories import make_candidate, make_family, make_instance, make_round, make_worker

    family = make_family(name="Reading", project=project)
    candidates = [make_candidate(instance=make_instance(family=family)) for _ in range(2)]
    round = make_round(task_type="verification", targets=candidates, workers_per_item=3, project=project)
    # The first reference gets 3/3 "correct", the second a 2/3 majority for "response_problem".
    answers = {candidates[0].pk: ["correct"] * 3, candidates[1].pk: ["response_problem", "correct", "response_problem"]}
    for number in range(3):
        worker = make_worker()
        while (assignment := request_assignment(round=round, worker=worker)) is not None:
            outcome = answers[assignment.item.candidate_id][number]
            submit_assignment(assignment_id=assignment.pk, worker=worker,
                                       data={"outcome": outcome, "harmful": False, "comment": ""})
    watch = round_watch(round=round, coverage_target=2)
    agreement = watch["agreement"]
    assert agreement["label"] == "Verification agreement"
    assert agreement["levels"] == [{"level": "3/3", "count": 1}, {"level": "2/3", "count": 1}]
    measures = {m["label"]: m["value"] for m in agreement["measures"]}
    assert measures["References judged"] == 2 and measures["Votes agreeing with the majority"] == pytest.approx(5 / 6)
    assert watch["coverage"] == [{"name": "Reading", "done": 2, "total": 2, "target": 2, "missing": 0, "reached": True}]


def test_coverage_per_family_against_the_target(data):
    coverage = {row["name"]: row for row in round_watch(round=data.pairwise, coverage_target=6)["coverage"]}
    assert {name: (row["done"], row["total"], row["reached"], row["missing"]) for name, row in coverage.items()} == {
        "Counting study-a": (6, 6, True, 0), "Colours study-a": (5, 6, False, 1)}


def test_a_type_without_agreement_or_coverage_shows_none(data):
    class Plain(TaskType):
        key = "pairwise"

    # The watch asks the type: a type that declares neither gets neither, whatever its name.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(REGISTRY, "get", lambda key: Plain())
        watch = round_watch(round=data.pairwise)
    assert watch["agreement"] is None and watch["coverage"] is None


def test_project_watch_aggregates_the_open_rounds(data, researcher):
    other = create_project(name="Other", slug="other", owner=researcher)
    judged_project(other)  # another project's rounds never count here
    watch = project_watch(project=data.pairwise.project, coverage_target=2)
    # The ranking rounds have all their judgments: complete, listed apart from the rounds in progress.
    assert {row["round"]["id"] for row in watch["open_rounds"]} == {data.pairwise.pk}
    assert {row["id"] for row in watch["complete_rounds"]} == {data.ranking.pk, data.ranking_ja.pk}
    totals = watch["totals"]
    assert totals["items"] == 12 and totals["items_completed"] == 11
    assert totals["in_flight"] == 1
    assert totals["spend"] == [{"currency": "USD", "spent": REWARD * 35, "budget_cap": Decimal("20.00"),
                                "uncapped": 0, "capped": 1, "spent_capped": REWARD * 35,
                                "spent_uncapped": Decimal("0")}]
    assert sum(row["submissions"] for row in watch["throughput"]) == 35
    assert {(row["name"], row["done"], row["reached"]) for row in watch["verified_per_family"]} == {
        ("Counting study-a", 2, True), ("Colours study-a", 1, False)}


def test_round_watch_page_and_json(client, researcher, data):
    client.force_login(researcher)
    page = client.get(reverse("cockpit:round-watch", args=["study-a", data.pairwise.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "11 / 12" in html and "20.00 USD/h" in html and "3/3" in html and "Counting study-a" in html
    assert f'href="{reverse("cockpit:round", args=["study-a", data.pairwise.pk])}" id="round-link"' in html
    agreeing = round_watch(round=data.pairwise)["agreement"]["measures"][-1]
    assert agreeing["label"] == "Votes agreeing with the majority" and agreeing["percent"] is True
    assert f'<th scope="row">Votes agreeing with the majority</th><td>{round(agreeing["value"] * 100)} %</td>' in html
    assert 'title="How many more are needed to reach the target">Missing</th>' in html
    assert "3 workers per item" in html
    CollectionRound.objects.filter(pk=data.pairwise.pk).update(workers_per_item=1)
    html = client.get(reverse("cockpit:round-watch", args=["study-a", data.pairwise.pk])).content.decode()
    assert "1 worker per item" in html and "1 workers" not in html
    response = client.get(reverse("cockpit:round-watch-json", args=["study-a", data.pairwise.pk]), {"target": "3"})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["items_completed"] == 11 and body["spent"] == "17.50" and body["coverage_target"] == 3
    assert all(row["reached"] for row in body["coverage"])


def test_project_watch_page_links_each_open_round(client, collaborator, data):
    client.force_login(collaborator)
    html = client.get(reverse("cockpit:watch", args=["study-a"])).content.decode()
    for round in (data.pairwise, data.ranking):
        assert reverse("cockpit:round-watch", args=["study-a", round.pk]) in html
    # The complete ranking rounds are linked under "Complete rounds", not counted as open.
    assert client.get(reverse("cockpit:watch-json", args=["study-a"])).json()["totals"]["rounds"] == 1
    assert "17.50 of a 20.00 USD cap in 1 capped round" in html and "without a cap" not in html
    CollectionRound.objects.filter(project__slug="study-a").update(budget_cap=None)
    html = client.get(reverse("cockpit:watch", args=["study-a"])).content.decode()
    assert "17.50 USD in 1 round without a cap" in html and "capped" not in html


def test_project_spend_compares_capped_rounds_with_their_caps_alone(client, researcher, data):
    """An uncapped round's spend is not set against the other rounds' caps: 17.50 spent in a round
    capped at 20.00 plus 17.50 in an uncapped one is within its cap, not 35.00 of 20.00."""
    uncapped = data.pairwise
    CollectionRound.objects.filter(pk=uncapped.pk).update(budget_cap=None)
    yen_round(uncapped.project, items_left=1)
    client.force_login(researcher)
    html = client.get(reverse("cockpit:watch", args=["study-a"])).content.decode()
    assert "spent of" not in html  # the old text, which read as overspending
    assert '<span class="value">17.50 USD</span>' in html
    assert "17.50 USD in 1 round without a cap" in html
    assert "90 of a 1000 JPY cap in 1 capped round" in html


@pytest.mark.parametrize("target", ["0", "-3", "ten", "100001"])
def test_bad_target_is_a_400_naming_it(client, researcher, data, target):
    client.force_login(researcher)
    response = client.get(reverse("cockpit:round-watch", args=["study-a", data.pairwise.pk]), {"target": target})
    assert response.status_code == 400 and "target" in response.content.decode()


def test_watch_is_for_members_only(client, make_researcher, researcher, data):
    stranger = make_researcher("eve")
    client.force_login(stranger)
    for url in (reverse("cockpit:round-watch", args=["study-a", data.pairwise.pk]),
                reverse("cockpit:round-watch-json", args=["study-a", data.pairwise.pk]),
                reverse("cockpit:watch", args=["study-a"]), reverse("cockpit:watch-json", args=["study-a"])):
        assert client.get(url).status_code == 404
    # A round of another project is not found under this one, even for its member.
    other = create_project(name="Other", slug="other", owner=stranger)
    client.force_login(researcher)
    assert client.get(reverse("cockpit:round-watch", args=["other", data.pairwise.pk])).status_code == 404
    client.force_login(stranger)
    assert client.get(reverse("cockpit:round-watch", args=[other.slug, data.pairwise.pk])).status_code == 404


def test_watch_pages_show_yen_without_decimal_places(client, researcher, project):
    round = yen_round(project, items_left=1)  # in progress, so the project's watch counts its spend
    client.force_login(researcher)
    html = client.get(reverse("cockpit:round-watch", args=["study-a", round.pk])).content.decode()
    assert '<span class="value">90 JPY</span>' in html and "spent of 1000 JPY budget" in html
    assert "(target 18 JPY/h)" in html
    html = client.get(reverse("cockpit:watch", args=["study-a"])).content.decode()
    assert '<span class="value">90 JPY</span>' in html and "90 of a 1000 JPY cap in 1 capped round" in html
    assert "<td>90 / 1000 JPY</td>" in html
    # The JSON keeps the exact stored amounts.
    body = client.get(reverse("cockpit:round-watch-json", args=["study-a", round.pk])).json()
    assert (body["spent"], body["budget_cap"]) == ("90.00", "1000.00")
