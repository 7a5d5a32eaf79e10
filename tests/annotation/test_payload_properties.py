"""Property tests of payload validation that need no database."""
from types import SimpleNamespace

import pytest
from django.core.exceptions import ValidationError
from hypothesis import given
from hypothesis import strategies as st

from annotation.task_types import REGISTRY
from annotation.task_types.ranking import shown_review_ids

REVIEW_IDS = [11, 12, 13, 14, 15]
ranking = REGISTRY.get("ranking")
pairwise = REGISTRY.get("pairwise")


def ranking_assignment():
    return SimpleNamespace(pk=7, presentation={"review_order": list(REVIEW_IDS)})


SHOWN = shown_review_ids(ranking_assignment())


@given(st.lists(st.sampled_from(REVIEW_IDS + [0, 16, 99]), max_size=8))
def test_a_ranking_is_accepted_exactly_when_it_is_a_permutation(order):
    is_permutation = sorted(order) == sorted(REVIEW_IDS)
    # The page posts shown ids; 0, 16 and 99 stand for ids this page never showed.
    posted = [SHOWN.get(review_id, review_id) for review_id in order]
    try:
        payload = ranking.validate(assignment=ranking_assignment(), data={"order": posted}, files={})
    except ValidationError:
        assert not is_permutation
    else:
        assert is_permutation and payload == {"order": order}


def test_the_page_review_ids_do_not_follow_the_review_ids():
    assert set(SHOWN.values()).isdisjoint(REVIEW_IDS)
    assert sorted(REVIEW_IDS) == sorted(SHOWN) and len(set(SHOWN.values())) == len(REVIEW_IDS)
    other = shown_review_ids(SimpleNamespace(pk=8, presentation={"review_order": list(REVIEW_IDS)}))
    assert set(other.values()).isdisjoint(SHOWN.values())  # another assignment, other ids


@given(st.permutations(REVIEW_IDS))
def test_ranks_follow_the_submitted_order(order):
    assignment = SimpleNamespace(payload={"order": list(order)})
    ranks = ranking.result(assignment)["ranks"]
    assert [ranks[str(review_id)] for review_id in order] == [1, 2, 3, 4, 5]


@given(st.sampled_from(["a", "b"]), st.sampled_from(["left", "right"]))
def test_the_pairwise_winner_is_the_side_shown_where_the_worker_clicked(left, choice):
    presentation = {"left": left, "right": "b" if left == "a" else "a"}
    assignment = SimpleNamespace(presentation=presentation, payload={"choice": choice})
    assert pairwise.result(assignment) == {"winner": presentation[choice]}


@pytest.mark.parametrize("data", [None, [], "left", {"choice": None}, {"choice": ["left"]}])
def test_malformed_pairwise_payloads_are_refused(data):
    with pytest.raises(ValidationError):
        pairwise.validate(assignment=SimpleNamespace(), data=data, files={})
