from django.contrib import admin

from .models import JudgedBattle, ReviewScore


@admin.register(ReviewScore)
class ReviewScoreAdmin(admin.ModelAdmin):
    list_display = ["model_name", "ranker_kind", "review_set", "prompt_rank", "score", "prompt_version", "updated_at"]
    list_filter = ["ranker_kind", "model_name", "review__review_set__language"]
    search_fields = ["model_name", "review__text"]
    list_select_related = ["review"]
    raw_id_fields = ["review"]
    readonly_fields = ["created_at", "updated_at"]

    @admin.display(ordering="review__review_set_id", description="review set")
    def review_set(self, score: ReviewScore) -> int:
        return score.review.review_set_id

    @admin.display(ordering="review__prompt_rank", description="prompt rank")
    def prompt_rank(self, score: ReviewScore) -> int:
        return score.review.prompt_rank


@admin.register(JudgedBattle)
class JudgedBattleAdmin(admin.ModelAdmin):
    """Battles of the LLM judge; the answers (chain of thought) are on the linked LLM calls."""

    list_display = ["instance", "model_a", "model_b", "verdict_1", "verdict_2", "winner", "judge_model",
                    "with_reference", "prompt_version", "updated_at"]
    list_filter = ["judge_model", "with_reference", "winner", "prompt_template"]
    search_fields = ["model_a", "model_b", "instance__instruction"]
    list_select_related = ["instance"]
    raw_id_fields = ["instance", "query_call_1", "query_call_2", "extraction_call_1", "extraction_call_2"]
    readonly_fields = ["created_at", "updated_at"]
