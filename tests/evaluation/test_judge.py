"""The LLM pairwise judge against the local OpenAI-compatible fake, through the real SDK."""
from __future__ import annotations

import json
import re
from decimal import ROUND_DOWN, Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from evaluation.judge.verdicts import battle_winner, parse_extracted, parse_verdict, position_bias, verdict_for
from evaluation.models import JudgedBattle
from evaluation.selectors import battles
from fakes.openai_server import FakeOpenAIServer, judge_responder
from llm.calls import max_completion_tokens, max_prompt_tokens
from llm.models import LLMCall, LLMRun, PromptTemplate
from llm.services import create_template_version
from tests.annotation.factories import make_instance, make_outputs, make_reference

pytestmark = pytest.mark.django_db

MODEL = "fake-model"
PRICES = {MODEL: {"input": 2, "output": 10}, "cheap-model": {"input": "0.15", "output": "0.6"}}
MODELS = ("model-x", "model-y")


def shown(body: dict) -> tuple[str, str] | None:
    """(Response A, Response B) of a judge request; None for other requests (extraction)."""
    text = body["messages"][-1]["content"]
    match = re.search(r"Response A: (.*?)\n\nResponse B: (.*?)\n\n", text, re.DOTALL)
    return (match.group(1), match.group(2)) if match else None


class ScriptedJudge:
    """Answers judge queries through ``verdict(a_text, b_text)`` and extraction queries with
    ``extracted``; records what each kind of request looked like."""

    def __init__(self, verdict, extracted="none"):
        self.verdict = verdict
        self.extracted = extracted
        self.judge_bodies: list[dict] = []
        self.extraction_bodies: list[dict] = []

    def __call__(self, endpoint, body):
        pair = shown(body)
        if pair is None:
            self.extraction_bodies.append(body)
            return self.extracted
        self.judge_bodies.append(body)
        return "Let me think step by step. " + self.verdict(*pair)


@pytest.fixture
def fake_server():
    with FakeOpenAIServer(responder=judge_responder) as server:
        yield server


@pytest.fixture
def llm_settings(settings, fake_server):
    settings.LLM_BASE_URL = fake_server.base_url
    settings.LLM_API_KEY = ""
    settings.LLM_MODEL = MODEL
    settings.LLM_PRICES = PRICES
    settings.LLM_MAX_RETRIES = 1
    return settings


@pytest.fixture
def pair_instance():
    instance = make_instance()
    make_outputs(instance=instance, models=MODELS)
    make_reference(instance=instance, text="The verified reference.")
    return instance


def judge(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("judge", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


# --- the pure core -----------------------------------------------------------------------------


def test_verdict_phrase_parsing():
    assert parse_verdict("A is thorough.\nOverall, Response A is better.") == "A"
    assert parse_verdict("overall, response b is better") == "B"
    assert parse_verdict("Both are fine. It is a tie.") is None
    assert parse_verdict("Overall, Response A is better. Overall, Response B is better.") is None  # ambiguous
    assert parse_extracted(" B. ") == "B" and parse_extracted("Response A") == "A"
    assert parse_extracted("none") is None and parse_extracted("I think A but maybe B") is None


def test_two_query_rule_and_position_mapping():
    assert verdict_for("A", 1) == "model_a" and verdict_for("A", 2) == "model_b"
    assert verdict_for("B", 2) == "model_a" and verdict_for(None, 1) is None
    assert battle_winner(["model_a", "model_a"]) == "model_a"
    assert battle_winner(["model_a", None]) == "model_a"
    assert battle_winner(["model_a", "model_b"]) == "tie"
    assert battle_winner([None, None]) == "tie"
    bias = position_bias([("model_a", "model_b"), ("model_a", "model_a"), (None, "model_b")])
    assert (bias["both_queries_decided"], bias["followed_position"], bias["consistent"]) == (2, 1, 1)
    assert bias["followed_position_rate"] == 0.5
    # Decided queries choosing Response A: q1 model_a (A), q2 model_b (A), q1 model_a, q2 model_a (B), q2 model_b (A).
    assert bias["response_a_chosen_rate"] == 4 / 5


# --- against the fake server -------------------------------------------------------------------


def test_both_orders_are_sent_and_the_battle_is_stored(llm_settings, fake_server, pair_instance, tmp_path):
    script = ScriptedJudge(lambda a, b: "Overall, Response A is better." if "model-x" in a
                           else "Overall, Response B is better.")
    fake_server.responder = script
    out, err = judge("--models", "model-x,model-y", "--json", str(tmp_path / "judge.json"))

    assert len(script.judge_bodies) == 2 and not script.extraction_bodies
    orders = [shown(body) for body in script.judge_bodies]
    assert sorted(orders) == sorted([("model-x says something.", "model-y says something."),
                                     ("model-y says something.", "model-x says something.")])
    system = script.judge_bodies[0]["messages"][0]
    assert system["role"] == "system" and "judge" in system["content"]
    user = script.judge_bodies[0]["messages"][1]["content"]
    assert f"Caption 0 of {pair_instance.instruction}" in user and pair_instance.instruction in user
    assert "Overall, Response A is better." in user and "reference" not in user.lower().split("instruction:")[1][:20]

    result = json.loads((tmp_path / "judge.json").read_text())
    assert result["battles"] == [{"instance_id": pair_instance.pk, "model_a": "model-x", "model_b": "model-y",
                                  "verdicts": ["model_a", "model_a"], "winner": "model_a"}]
    assert result["position_bias"]["followed_position"] == 0
    assert [row["model"] for row in result["ratings"]] == ["model-x", "model-y"]

    battle = JudgedBattle.objects.get()
    assert (battle.source, battle.winner, battle.judge_model, battle.with_reference) == ("judge", "model_a", MODEL, False)
    assert battle.prompt_template == "visitbench-judge-no-reference" and battle.prompt_version == 1
    # The raw answers (chain of thought), tokens and cost stay on the calls.
    assert "step by step" in battle.query_call_1.response_text and battle.query_call_1.cost_usd > 0
    assert battle.query_call_1.template_name == "visitbench-judge-no-reference"
    assert "1 battles judged (0 ties)" in out and not err


def test_position_biased_judge_gives_a_tie(llm_settings, fake_server, pair_instance, tmp_path):
    fake_server.responder = ScriptedJudge(lambda a, b: "Overall, Response A is better.")
    judge("--models", "model-x,model-y", "--json", str(tmp_path / "judge.json"))
    result = json.loads((tmp_path / "judge.json").read_text())
    [battle] = result["battles"]
    assert battle["verdicts"] == ["model_a", "model_b"] and battle["winner"] == "tie"
    assert result["position_bias"]["followed_position"] == 1
    assert result["position_bias"]["followed_position_rate"] == 1.0
    assert result["position_bias"]["response_a_chosen_rate"] == 1.0


def test_missing_verdict_goes_to_the_extractor_and_stays_a_tie_when_still_missing(
        llm_settings, fake_server, pair_instance, tmp_path):
    script = ScriptedJudge(lambda a, b: f"Both responses have merits ({a[:7]} first); I cannot decide.",
                           extracted="none")
    fake_server.responder = script
    judge("--models", "model-x,model-y", "--extractor-model", "cheap-model", "--json", str(tmp_path / "j.json"))

    assert len(script.extraction_bodies) == 2
    assert {body["model"] for body in script.extraction_bodies} == {"cheap-model"}
    assert "Both responses have merits" in script.extraction_bodies[0]["messages"][-1]["content"]
    [battle] = json.loads((tmp_path / "j.json").read_text())["battles"]
    assert battle["verdicts"] == [None, None] and battle["winner"] == "tie"
    stored = JudgedBattle.objects.get()
    assert stored.extractor_model == "cheap-model" and stored.extraction_call_1.model == "cheap-model"


def test_extracted_verdict_counts(llm_settings, fake_server, pair_instance, tmp_path):
    # The judge writes its preference in its own words; the extractor reads "B" out of query 2.
    fake_server.responder = ScriptedJudge(
        lambda a, b: "Overall, Response B is better." if "model-y" in b else "I prefer the other one.",
        extracted="A",
    )
    judge("--models", "model-x,model-y", "--json", str(tmp_path / "j.json"))
    [battle] = json.loads((tmp_path / "j.json").read_text())["battles"]
    # Query 1: model-y is B → model_b. Query 2: extraction says A = model-y → model_b.
    assert battle["verdicts"] == ["model_b", "model_b"] and battle["winner"] == "model_b"


def test_a_rerun_sends_nothing(llm_settings, fake_server, pair_instance):
    fake_server.responder = ScriptedJudge(lambda a, b: f"Hmm, {a[:7]} or {b[:7]}.", extracted="B")
    judge("--models", "model-x,model-y")
    sent = len(fake_server.completion_requests)
    assert sent == 4  # two queries, two extractions
    out, _ = judge("--models", "model-x,model-y")
    assert len(fake_server.completion_requests) == sent
    assert "0 requests sent, 4 answered from the cache" in out
    assert JudgedBattle.objects.count() == 1


def test_budget_stops_the_run_and_stores_no_half_battle(llm_settings, fake_server, pair_instance):
    # Measure one query: its actual cost and its worst case (what the budget reserves before sending).
    judge("--models", "model-x,model-y")
    call = LLMCall.objects.filter(purpose="visitbench_judge").first()
    worst = (max_prompt_tokens(call.request, 0) * 2 + max_completion_tokens(call.request) * 10) / Decimal(1_000_000)
    JudgedBattle.objects.all().delete()
    for _ in range(3):
        instance = make_instance()
        make_outputs(instance=instance, models=MODELS)
    fake_server.reset()
    # Room for the worst case of one query plus the actual cost of 2.5 queries: three are sent.
    cap = (worst + call.cost_usd * Decimal("2.5")).quantize(Decimal("0.000001"), rounding=ROUND_DOWN)
    out, err = judge("--models", "model-x,model-y", "--budget", str(cap))

    run = LLMRun.objects.latest("pk")
    assert run.status == "budget_exceeded" and run.spent_usd <= run.budget_usd
    assert "The budget was reached" in out and "budget_exceeded" in err
    assert len(fake_server.completion_requests) == 3
    # The first instance's battle comes from the cache at no cost; of the new pairs one is complete,
    # the one with a single query answered waits for a re-run.
    assert JudgedBattle.objects.count() == 2
    # The re-run with more budget sends only what is missing and completes the battles.
    judge("--models", "model-x,model-y", "--budget", "1")
    assert len(fake_server.completion_requests) == 6
    assert JudgedBattle.objects.count() == 4


def test_reference_mode_shows_the_reference_and_judges_against_it(llm_settings, fake_server, pair_instance, tmp_path):
    script = ScriptedJudge(lambda a, b: "Overall, Response A is better.")
    fake_server.responder = script
    judge("--models", "model-x,model-y", "--reference", "--json", str(tmp_path / "j.json"))
    result = json.loads((tmp_path / "j.json").read_text())
    pairs = [(b["model_a"], b["model_b"]) for b in result["battles"]]
    assert pairs == [("model-x", "model-y"), ("model-x", "reference"), ("model-y", "reference")]
    assert len(script.judge_bodies) == 6
    assert all("Reference response, verified by people as correct: The verified reference."
               in body["messages"][-1]["content"] for body in script.judge_bodies)
    assert set(JudgedBattle.objects.values_list("with_reference", "prompt_template")) == {
        (True, "visitbench-judge-reference")}


def test_against_reference_uses_the_reference_free_prompt(llm_settings, fake_server, pair_instance):
    script = ScriptedJudge(lambda a, b: "Overall, Response A is better.")
    fake_server.responder = script
    judge("--models", "model-x", "--against-reference")
    assert len(script.judge_bodies) == 2
    assert all("verified by people" not in body["messages"][-1]["content"] for body in script.judge_bodies)
    assert JudgedBattle.objects.get().model_b == "reference"


def test_edited_template_is_used_and_versioned(llm_settings, fake_server, pair_instance):
    judge("--models", "model-x,model-y")
    latest = PromptTemplate.objects.latest_version("visitbench-judge-no-reference")
    create_template_version(name=latest.name, text="Compare.\n" + latest.text)
    judge("--models", "model-x,model-y")
    assert sorted(JudgedBattle.objects.values_list("prompt_version", flat=True)) == [1, 2]
    assert LLMCall.objects.filter(template_version=2).count() == 2


def test_judged_battles_feed_the_ratings_apart_from_human_ones(llm_settings, fake_server, pair_instance, tmp_path):
    fake_server.responder = ScriptedJudge(lambda a, b: "Overall, Response A is better." if "model-y" in a
                                          else "Overall, Response B is better.")
    judge("--models", "model-x,model-y")
    assert battles(source="judge").to_dict("records") == [
        {"model_a": "model-x", "model_b": "model-y", "winner": "model_b", "category": pair_instance.family.name}]
    assert battles(source="human").empty
    out = StringIO()
    call_command("ratings", "--from-db", "--source", "judge", "--json", str(tmp_path / "r.json"), stdout=out)
    ratings = json.loads((tmp_path / "r.json").read_text())
    assert ratings["models"][0]["model"] == "model-y"
    with pytest.raises(CommandError, match="no pairwise judgments"):
        call_command("ratings", "--from-db", "--source", "human", stdout=StringIO())


def test_judge_runs_on_the_demo_data(llm_settings, fake_server, tmp_path):
    call_command("load_demo", stdout=StringIO())
    out, err = judge("--models", "llava-demo,blip2-demo,instructblip-demo", "--against-reference",
                     "--json", str(tmp_path / "demo.json"))
    result = json.loads((tmp_path / "demo.json").read_text())
    assert result["battles"] and not err
    assert {row["model"] for row in result["ratings"]} >= {"llava-demo", "blip2-demo", "reference"}
    assert all(battle["winner"] in ("model_a", "model_b", "tie") for battle in result["battles"])
    assert JudgedBattle.objects.count() == len(result["battles"])


@pytest.mark.parametrize("args, message", [
    (["--models", "model-x"], "at least two models"),
    (["--models", "model-x,nobody"], "no outputs stored for model\\(s\\): nobody"),
    (["--models", "model-x,reference"], "names the accepted reference"),
    (["--models", ","], "give comma-separated model names"),
    (["--models", "model-x,model-y", "--budget", "-1"], "non-negative"),
    (["--models", "model-x,model-y", "--budget", "0.0000001"], "at most 6 decimal places"),
    (["--models", "model-x,model-y", "--json", "/nonexistent-folder/x.json"], "does not exist"),
])
def test_bad_options_are_clear_errors_and_change_nothing(llm_settings, pair_instance, args, message):
    with pytest.raises(CommandError, match=message):
        judge(*args)
    assert not LLMRun.objects.exists() and not JudgedBattle.objects.exists()


def test_without_a_server_it_says_what_to_set(settings, pair_instance):
    settings.LLM_BASE_URL, settings.LLM_API_KEY = "", ""
    with pytest.raises(CommandError, match="LLM is not configured.*LLM_BASE_URL"):
        judge("--models", "model-x,model-y")
    assert not LLMRun.objects.exists()


def test_ratings_source_option_goes_with_the_database(tmp_path):
    battles_file = tmp_path / "b.csv"
    battles_file.write_text("model_a,model_b,winner\nx,y,model_a\n")
    with pytest.raises(CommandError, match="--source goes with --from-db"):
        call_command("ratings", str(battles_file), "--source", "judge", stdout=StringIO())
    with pytest.raises(CommandError, match="--round selects a crowd round"):
        call_command("ratings", "--from-db", "--source", "judge", "--round", "1", stdout=StringIO())
    with pytest.raises(CommandError, match="no battles judged by the LLM judge"):
        call_command("ratings", "--from-db", "--source", "judge", stdout=StringIO())
