"""Stored results of evaluation runs."""
from django.db import models


class RankerKind(models.TextChoices):
    """How a model's scores were obtained; the names the ``irr_rank`` command takes."""

    LOCAL_PERPLEXITY = "local-perplexity", "Perplexity under a local causal LM"
    SERVER_PERPLEXITY = "server-perplexity", "Perplexity from a completions server's prompt log-probabilities"
    VLM_PERPLEXITY = "vlm-perplexity", "Perplexity given the image, from a vision-language model's prompt log-probabilities"
    CHAT = "chat", "Ranking answered by a chat model"
    CLIP_SCORE = "clip-score", "CLIP image-text cosine distance (1 - similarity)"
    UPLOADED = "uploaded", "Uploaded scores or ranks"


class ReviewScore(models.Model):
    """IRR: one model's score for one review (lower = better: a perplexity or a rank)."""

    review = models.ForeignKey("datasets_app.Review", on_delete=models.CASCADE, related_name="model_scores")
    model_name = models.CharField(max_length=200)
    ranker_kind = models.CharField(max_length=30, choices=RankerKind.choices)
    score = models.FloatField(help_text="Lower is better.")
    prompt_version = models.CharField(
        max_length=200, blank=True,
        help_text="Which prompt produced the score, e.g. a template name@version or a prefix version.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model_name", "ranker_kind", "review_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["review", "model_name", "ranker_kind"], name="one_score_per_review_model_and_kind"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model_name} ({self.ranker_kind}) on review {self.review_id}: {self.score:g}"


class BattleSource(models.TextChoices):
    """Who judged a battle; ratings keep the sources apart."""

    HUMAN = "human", "Crowd workers (pairwise task)"
    JUDGE = "judge", "LLM judge"


class JudgedBattle(models.Model):
    """One pair of outputs for one instance, judged by an LLM in both orderings.

    Query 1 shows ``model_a`` as Response A, query 2 shows ``model_b`` as Response A. A verdict
    is the model the query preferred ("model_a"/"model_b") or empty when it named neither, even
    after extraction; ``winner`` follows the two-query rule. The answers themselves (the chain of
    thought), tokens and cost stay on the LLM calls linked here. ``model_b`` is "reference" when
    the accepted reference is the other side.
    """

    class Winner(models.TextChoices):
        MODEL_A = "model_a", "model_a"
        MODEL_B = "model_b", "model_b"
        TIE = "tie", "tie"

    class Verdict(models.TextChoices):
        MODEL_A = "model_a", "model_a"
        MODEL_B = "model_b", "model_b"
        NONE = "", "none"

    source = models.CharField(max_length=10, choices=BattleSource.choices, default=BattleSource.JUDGE)
    instance = models.ForeignKey("datasets_app.Instance", on_delete=models.CASCADE, related_name="judged_battles")
    model_a = models.CharField(max_length=200)
    model_b = models.CharField(max_length=200)
    verdict_1 = models.CharField(max_length=10, choices=Verdict.choices, blank=True)
    verdict_2 = models.CharField(max_length=10, choices=Verdict.choices, blank=True)
    winner = models.CharField(max_length=10, choices=Winner.choices)
    judge_model = models.CharField(max_length=200)
    extractor_model = models.CharField(max_length=200, blank=True)
    with_reference = models.BooleanField(help_text="Whether the judge saw the human-verified reference.")
    prompt_template = models.CharField(max_length=100)
    prompt_version = models.PositiveIntegerField()
    query_call_1 = models.ForeignKey("llm.LLMCall", null=True, on_delete=models.SET_NULL, related_name="+")
    query_call_2 = models.ForeignKey("llm.LLMCall", null=True, on_delete=models.SET_NULL, related_name="+")
    extraction_call_1 = models.ForeignKey("llm.LLMCall", null=True, blank=True, on_delete=models.SET_NULL,
                                          related_name="+")
    extraction_call_2 = models.ForeignKey("llm.LLMCall", null=True, blank=True, on_delete=models.SET_NULL,
                                          related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["instance", "model_a", "model_b", "judge_model", "with_reference", "prompt_template",
                        "prompt_version"],
                name="one_judged_battle_per_pair_judge_and_prompt",
            ),
            models.CheckConstraint(condition=~models.Q(model_a=models.F("model_b")), name="judged_battle_two_sides"),
        ]

    def __str__(self) -> str:
        return f"{self.model_a} vs {self.model_b} on instance {self.instance_id}: {self.winner} ({self.judge_model})"


class ImportedPreference(models.Model):
    """One published human pairwise judgment, imported from a file (VisIT-Bench's pairwise
    preference CSV). It feeds the human ratings with origin ``imported``; it is not crowd work
    done here (no worker, assignment, payment or wage).

    Its identity is its content: the ``occurrence``-th identical judgment (same instance, sides
    and winner) of the file, so re-importing a file adds nothing and a longer version of it adds
    only the new judgments.
    """

    class Winner(models.TextChoices):
        MODEL_A = "model_a", "model_a"
        MODEL_B = "model_b", "model_b"

    instance = models.ForeignKey("datasets_app.Instance", on_delete=models.CASCADE,
                                 related_name="imported_preferences")
    model_a = models.CharField(max_length=200)
    model_b = models.CharField(max_length=200)
    winner = models.CharField(max_length=10, choices=Winner.choices)
    occurrence = models.PositiveIntegerField(help_text="1 for the first identical judgment in the file, 2 for the next…")
    source_file = models.CharField(max_length=300, help_text="Name of the imported file.")
    source_row = models.PositiveIntegerField(help_text="Data row in that file (1 = first row after the header).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "model_a", "model_b", "winner", "occurrence"],
                                    name="one_imported_preference_per_occurrence"),
            models.CheckConstraint(condition=~models.Q(model_a=models.F("model_b")),
                                   name="imported_preference_two_sides"),
        ]

    def __str__(self) -> str:
        return f"{self.model_a} vs {self.model_b} on instance {self.instance_id}: {self.winner} (imported)"


class StoredResult(models.Model):
    """One of a project's results as its pages serve it (a materialised view of the judgments): a
    leaderboard of one source and method, or the IRR report, at the pages' default parameters, or a
    round's agreement so far as the watch pages show it (one row per language of the cockpit).

    ``data`` is the JSON text the page renders and the download gives, ``plots`` its PNGs (base64 by
    name). ``judgment_count`` and ``input_digest`` (SHA-256 of the table read) say what it was
    computed from; ``inputs_read_at`` is when that table was read, so judgments recorded later
    (``ResultsRefresh.changed_at``) show as waiting. Written only by ``evaluation.stored_results``.
    """

    class Kind(models.TextChoices):
        LEADERBOARD = "leaderboard", "Leaderboard"
        IRR = "irr", "IRR report"
        AGREEMENT = "agreement", "A round's agreement so far (the watch pages), in one language"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="stored_results")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    key = models.CharField(max_length=100, help_text="The view's parameters, e.g. human/elo/200/0.")
    parameters = models.JSONField(default=dict)
    # JSON text, not a JSON column: PostgreSQL's jsonb would reorder the keys, and the order of the
    # categories and items is the page's.
    data = models.TextField(blank=True, help_text="The result's JSON; empty when it was refused (see error).")
    plots = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, help_text="Why these judgments could not be computed, as the page says it.")
    judgment_count = models.PositiveIntegerField()
    input_digest = models.CharField(max_length=64)
    inputs_read_at = models.DateTimeField()
    computed_at = models.DateTimeField()
    compute_seconds = models.FloatField(default=0.0)

    class Meta:
        ordering = ["project", "kind", "key"]
        constraints = [
            models.UniqueConstraint(fields=["project", "kind", "key"], name="one_stored_result_per_project_view"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key} of project {self.project_id} ({self.judgment_count} judgments)"


class ResultsRefresh(models.Model):
    """A project's pending flag for its stored results: when its judgments last changed, and whether
    a recomputation is queued (``queued_at``; one at a time, so many judgments make one)."""

    project = models.OneToOneField("projects.Project", on_delete=models.CASCADE, related_name="results_refresh")
    changed_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"results of project {self.project_id}: changed {self.changed_at}, queued {self.queued_at}"
