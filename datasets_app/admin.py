from django.contrib import admin

from .models import (
    AcceptedReference,
    Caption,
    FamilySeedImage,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ModelOutput,
    ReferenceCandidate,
    Review,
    ReviewSet,
    Verification,
)


class FamilySeedImageInline(admin.TabularInline):
    model = FamilySeedImage
    extra = 0
    raw_id_fields = ["image"]


@admin.register(InstructionFamily)
class InstructionFamilyAdmin(admin.ModelAdmin):
    list_display = ["name", "is_multi_image", "origin", "source_dataset", "instance_count"]
    list_filter = ["is_multi_image", "origin"]
    search_fields = ["name", "description", "source_dataset"]
    inlines = [FamilySeedImageInline]

    @admin.display(description="instances")
    def instance_count(self, family):
        return family.instances.count()


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ["id", "__str__", "license", "creator", "width", "height", "size_bytes"]
    list_filter = ["license"]
    search_fields = ["url", "source_url", "creator", "sha256", "category"]
    readonly_fields = ["sha256", "size_bytes", "width", "height"]


class InstanceImageInline(admin.TabularInline):
    model = InstanceImage
    extra = 0
    raw_id_fields = ["image"]


class CaptionInline(admin.StackedInline):
    model = Caption
    extra = 0
    fields = ["position", "kind", "text", "model_name", "source", "is_current"]


class ReferenceCandidateInline(admin.StackedInline):
    model = ReferenceCandidate
    extra = 0
    fields = ["model_name", "text", "prompt_template", "prompt_template_version", "source"]
    show_change_link = True


@admin.register(Instance)
class InstanceAdmin(admin.ModelAdmin):
    list_display = ["id", "family", "short_instruction", "language", "status", "discard_reason", "source"]
    list_filter = ["status", "discard_reason", "language", "source", "family__is_multi_image", "family"]
    search_fields = ["instruction", "family__name", "captions__text"]
    list_select_related = ["family"]
    raw_id_fields = ["created_by"]
    readonly_fields = ["content_key", "created_at", "updated_at"]
    inlines = [InstanceImageInline, CaptionInline, ReferenceCandidateInline]

    @admin.display(description="instruction")
    def short_instruction(self, instance):
        return instance.instruction[:80]


@admin.register(Caption)
class CaptionAdmin(admin.ModelAdmin):
    list_display = ["id", "instance", "position", "kind", "source", "is_current"]
    list_filter = ["kind", "source", "is_current"]
    search_fields = ["text"]
    raw_id_fields = ["instance", "author"]


class VerificationInline(admin.TabularInline):
    model = Verification
    extra = 0
    raw_id_fields = ["worker"]


@admin.register(ReferenceCandidate)
class ReferenceCandidateAdmin(admin.ModelAdmin):
    list_display = ["id", "instance", "model_name", "prompt_template", "prompt_template_version", "source"]
    list_filter = ["model_name", "source"]
    search_fields = ["text", "instance__instruction"]
    raw_id_fields = ["instance"]
    inlines = [VerificationInline]


@admin.register(Verification)
class VerificationAdmin(admin.ModelAdmin):
    list_display = ["id", "candidate", "outcome", "harmful", "is_aggregate", "source", "worker"]
    list_filter = ["outcome", "harmful", "is_aggregate", "source"]
    search_fields = ["comment"]
    raw_id_fields = ["candidate", "worker"]


@admin.register(AcceptedReference)
class AcceptedReferenceAdmin(admin.ModelAdmin):
    list_display = ["instance", "origin", "created_at"]
    list_filter = ["origin"]
    search_fields = ["text", "instance__instruction"]
    raw_id_fields = ["instance", "candidate"]


@admin.register(ModelOutput)
class ModelOutputAdmin(admin.ModelAdmin):
    list_display = ["id", "instance", "model_name", "source"]
    list_filter = ["model_name", "source"]
    search_fields = ["text", "model_name"]
    raw_id_fields = ["instance"]


class ReviewInline(admin.TabularInline):
    model = Review
    extra = 0
    max_num = ReviewSet.REVIEWS_PER_SET


@admin.register(ReviewSet)
class ReviewSetAdmin(admin.ModelAdmin):
    list_display = ["id", "external_id", "category", "language", "source", "generator_model"]
    list_filter = ["language", "category", "source"]
    search_fields = ["external_id", "category", "reviews__text"]
    raw_id_fields = ["image"]
    inlines = [ReviewInline]
