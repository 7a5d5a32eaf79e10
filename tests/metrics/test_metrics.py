"""Every metric against the library it wraps, called directly on known texts."""
import os
from pathlib import Path

import numpy as np
import pytest

from evaluation.metrics.base import MetricUnavailable
from evaluation.metrics.bertscore import packaged_minilm_path
from evaluation.metrics.registry import METRICS, make_metric
from kernel.registry import UnknownName

CANDIDATE = "The red circle is to the left of the blue square."
REFERENCE = "A red circle sits left of a blue square, and a green triangle is on the right."
OTHER = "There are three shapes: a circle, a square and a triangle."
JA_CANDIDATE = "猫がマットの上に座っている。"
JA_REFERENCE = "猫はマットの上にいる。"


def mecab_wakati(text: str) -> list[str]:
    import ipadic
    import MeCab

    return MeCab.Tagger(f"{ipadic.MECAB_ARGS} -Owakati").parse(text).split()


def lcs_length(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


def test_the_registry_lists_each_metric_under_its_own_name():
    assert list(METRICS) == ["bleu4", "rougeL", "meteor", "cider", "bertscore", "length", "random"]
    for name, metric_class in METRICS.items():
        assert metric_class.name == name
        assert make_metric(name).describe()["label"] == metric_class.label
    with pytest.raises(UnknownName, match="unknown metric 'bleu'"):
        make_metric("bleu")


def test_bleu4_is_sacrebleu_sentence_bleu():
    import sacrebleu

    scores = make_metric("bleu4").score([CANDIDATE, OTHER], [REFERENCE, REFERENCE], ["en", "en"])
    assert scores[0] == pytest.approx(sacrebleu.sentence_bleu(CANDIDATE, [REFERENCE]).score)
    assert scores[1] == pytest.approx(sacrebleu.sentence_bleu(OTHER, [REFERENCE]).score)
    assert scores[0] > scores[1] > 0


def test_bleu4_segments_japanese_with_mecab():
    from sacrebleu.metrics import BLEU

    score = make_metric("bleu4").score([JA_CANDIDATE], [JA_REFERENCE], ["ja"])[0]
    expected = BLEU(tokenize="ja-mecab", effective_order=True).sentence_score(JA_CANDIDATE, [JA_REFERENCE]).score
    assert score == pytest.approx(expected)
    # Unsegmented, the sentence is one token and shares nothing with the reference.
    unsegmented = BLEU(tokenize="13a", effective_order=True).sentence_score(JA_CANDIDATE, [JA_REFERENCE]).score
    assert score > unsegmented


def test_rouge_l_is_rouge_score_with_the_porter_stemmer():
    from rouge_score import rouge_scorer

    expected = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(REFERENCE, CANDIDATE)["rougeL"].fmeasure
    assert make_metric("rougeL").score([CANDIDATE], [REFERENCE], ["en"])[0] == pytest.approx(expected)


def test_rouge_l_in_japanese_is_the_lcs_over_mecab_segments():
    candidate, reference = mecab_wakati(JA_CANDIDATE), mecab_wakati(JA_REFERENCE)
    assert candidate == ["猫", "が", "マット", "の", "上", "に", "座っ", "て", "いる", "。"]
    assert reference == ["猫", "は", "マット", "の", "上", "に", "いる", "。"]
    common = lcs_length(candidate, reference)
    assert common == 7
    precision, recall = common / len(candidate), common / len(reference)
    expected = 2 * precision * recall / (precision + recall)
    assert make_metric("rougeL").score([JA_CANDIDATE], [JA_REFERENCE], ["ja"])[0] == pytest.approx(expected)
    # rouge-score's own tokenizer keeps only Latin letters and digits: Japanese would score 0.
    from rouge_score import rouge_scorer

    assert rouge_scorer.RougeScorer(["rougeL"]).score(JA_REFERENCE, JA_CANDIDATE)["rougeL"].fmeasure == 0


def test_meteor_is_nltk_meteor_with_wordnet_synonyms():
    from nltk.translate.meteor_score import meteor_score

    metric = make_metric("meteor")
    ours = metric.score([CANDIDATE, "the dog barked", "the cat barked"],
                        [REFERENCE, "the hound barked", "the hound barked"], ["en"] * 3)
    assert ours[0] == pytest.approx(meteor_score([REFERENCE.lower().replace(",", "").replace(".", "").split()],
                                                 CANDIDATE.lower().replace(".", "").split()))
    assert ours[1] == pytest.approx(meteor_score([["the", "hound", "barked"]], ["the", "dog", "barked"]))
    # "dog" meets "hound" only through a WordNet synset: the Debian WordNet is in use.
    assert ours[1] > 0.9 > ours[2]


def test_cider_is_the_coco_scorer_over_the_whole_set():
    from pycocoevalcap.cider.cider import Cider

    candidates = [CANDIDATE, OTHER, "a blue square"]
    references = [REFERENCE, REFERENCE, "The blue square is small."]
    tokenized = {
        0: "the red circle is to the left of the blue square",
        1: "there are three shapes a circle a square and a triangle",
        2: "a blue square",
    }
    reference = "a red circle sits left of a blue square and a green triangle is on the right"
    refs = {0: [reference], 1: [reference], 2: ["the blue square is small"]}
    _mean, expected = Cider().compute_score(refs, {key: [text] for key, text in tokenized.items()})
    scores = make_metric("cider").score(candidates, references, ["en"] * 3)
    np.testing.assert_allclose(scores, expected)


@pytest.fixture(scope="module")
def bertscore_metric():
    return make_metric("bertscore")


def test_bertscore_is_bert_score_f1_with_the_packaged_minilm(bertscore_metric):
    from bert_score import score

    model = packaged_minilm_path()
    assert model is not None and (model / "model.safetensors").is_file()
    ours = bertscore_metric.score([CANDIDATE, OTHER], [REFERENCE, REFERENCE], ["en", "en"])
    _p, _r, f1 = score([CANDIDATE, OTHER], [REFERENCE, REFERENCE], model_type=str(model), num_layers=6)
    np.testing.assert_allclose(ours, f1.numpy(), rtol=1e-5)
    assert ours[0] > ours[1]
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert bertscore_metric.describe()["layer"] == 6


def test_bertscore_refuses_a_folder_without_a_model(tmp_path):
    with pytest.raises(MetricUnavailable, match="has no config.json"):
        make_metric("bertscore", bertscore_model=str(tmp_path)).score(["a"], ["b"], ["en"])


def test_length_counts_non_whitespace_tokens():
    scores = make_metric("length").score(["two  words\n", " one", "", JA_CANDIDATE], ["x"] * 4, ["en"] * 3 + ["ja"])
    assert scores.tolist() == [2, 1, 0, len(mecab_wakati(JA_CANDIDATE))]


def test_random_baseline_is_seeded_and_blind_to_text():
    first = make_metric("random", seed=1).score(["a", "b", "c"], ["x", "y", "z"], ["en"] * 3)
    again = make_metric("random", seed=1).score(["other", "texts", "here"], ["x", "y", "z"], ["en"] * 3)
    other_seed = make_metric("random", seed=2).score(["a", "b", "c"], ["x", "y", "z"], ["en"] * 3)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other_seed)
    assert ((first >= 0) & (first < 1)).all()


@pytest.mark.parametrize("name", [name for name in METRICS if name != "bertscore"])
def test_metrics_refuse_misaligned_input(name):
    with pytest.raises(ValueError, match="differ in length"):
        make_metric(name).score(["a", "b"], ["a"], ["en", "en"])


# A reader made without Open Multilingual WordNet says so; English METEOR does not need it.
@pytest.mark.filterwarnings("ignore:The multilingual functions are not available:UserWarning")
def test_wordnet_setup_copies_debians_wordnet_and_adds_lexnames(tmp_path, monkeypatch):
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    from evaluation.metrics.wordnet_setup import install_wordnet, main

    target = install_wordnet(dest=tmp_path)
    lines = (target / "lexnames").read_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3" and lines[18] == "18\tnoun.person\t1" and lines[44] == "44\tadj.ppl\t3"
    # NLTK reads corpora only from its data path.
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])
    reader = WordNetCorpusReader(str(target), None)
    assert reader.get_version() == "3.0"
    assert reader.synset("dog.n.01").lexname() == "noun.animal"
    assert main(["--source", str(tmp_path / "missing"), "--dest", str(tmp_path)]) == 1
    with pytest.raises(FileNotFoundError, match="apt-get install wordnet-base wordnet-sense-index"):
        install_wordnet(source=Path(tmp_path / "missing"), dest=tmp_path)


def test_cider_runs_without_java(tmp_path):
    """pycocoevalcap calls Java only in its PTB tokenizer and METEOR/SPICE; CIDEr runs without it."""
    import subprocess
    import sys

    script = (
        "import shutil\n"
        "assert shutil.which('java') is None\n"
        "from evaluation.metrics.registry import make_metric\n"
        "print(make_metric('cider').score(['a red circle', 'a dog'], ['a red circle here', 'a cat'], ['en', 'en']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True,
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)}, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("[")


# An empty model output (nothing but whitespace) has a defined score in every metric: 0.0 for the
# metrics that compare it with the reference and for the length, the seeded draw for the random
# baseline, which ignores the text. bert-score 0.3.13 with transformers 5 used to raise
# AttributeError on it, which stopped metric_agreement and the board's metric runs.
EXPECTED_EMPTY_SCORE = {"bleu4": 0.0, "rougeL": 0.0, "meteor": 0.0, "cider": 0.0, "bertscore": 0.0, "length": 0.0}


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_scores_an_empty_candidate(name):
    metric = make_metric(name, seed=3)
    candidates = ["", CANDIDATE, " \n\t", JA_CANDIDATE]
    references = [REFERENCE, REFERENCE, REFERENCE, JA_REFERENCE]
    languages = ["en", "en", "en", "ja"]
    scores = metric.score(candidates, references, languages)
    assert scores.shape == (4,) and np.isfinite(scores).all()
    if name == "random":
        # Blind to the text: the same draws as for any other candidates.
        np.testing.assert_array_equal(scores, make_metric(name, seed=3).score(["a", "b", "c", "d"], references,
                                                                                   languages))
        assert metric.empty_score is None
    else:
        assert metric.empty_score == EXPECTED_EMPTY_SCORE[name]
        assert scores[0] == scores[2] == EXPECTED_EMPTY_SCORE[name]
        assert scores[1] > 0 and scores[3] > 0
    # The texts beside an empty one score as they do alone (CIDEr: over the same set of references).
    if name not in ("cider", "random"):
        alone = metric.score([CANDIDATE, JA_CANDIDATE], [REFERENCE, JA_REFERENCE], ["en", "ja"])
        assert scores[[1, 3]] == pytest.approx(alone)


def test_bertscore_scores_an_empty_and_a_normal_candidate(bertscore_metric):
    """bert-score and the installed transformers work together, empty candidate included."""
    import bert_score
    import transformers

    assert bert_score.__version__ and transformers.__version__
    scores = bertscore_metric.score(["", "a cat"], ["a cat", "a cat"], ["en", "en"])
    assert scores[0] == 0.0
    assert scores[1] == pytest.approx(1.0, abs=1e-5)
