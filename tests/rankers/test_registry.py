"""The ranker registry: one entry per ranker, each class building itself from the common options."""
from __future__ import annotations

import pytest

from evaluation.rankers.registry import RANKERS, RankerOptions, make_ranker, ranker_class
from llm.params import LLMRunParams


@pytest.mark.parametrize("name", sorted(RANKERS))
def test_every_ranker_declares_what_it_needs(name):
    cls = ranker_class(name)
    assert isinstance(cls.uses_llm, bool) and isinstance(cls.needs_scores_file, bool)
    assert callable(cls.from_options)


def test_server_rankers_take_the_llm_options():
    seen = []
    chat = make_ranker("chat", model="m", with_image=False, seed=7, llm=LLMRunParams(on_requests=seen.append))
    assert (chat.model_name, chat.with_image, chat.seed) == ("m", False, 7)
    assert chat.llm.model == "m" and chat.llm.on_requests == seen.append
    server = make_ranker("server-perplexity", model="lm")
    assert server.model_name == "lm"


def test_uploaded_ranker_needs_its_file(tmp_path):
    with pytest.raises(ValueError, match="needs a scores file"):
        make_ranker("uploaded")
    ranker = make_ranker("uploaded", scores_path=tmp_path / "scores.csv", model="a")
    assert ranker.model_name == "a"


def test_unknown_options_are_refused():
    with pytest.raises(TypeError):
        make_ranker("chat", temperature=1)
    assert RankerOptions().with_image is True
