"""Researcher admin for rounds, items, assignments and workers; the actions call the services.
The review of assignments (approve, reject) acts at their provider too: the crowd layer adds those
actions (``providers/admin.py``).

Items are checked by their round's task type through ``WorkItem.clean``: a target that does not
fit the round is a form error on that field, never a saved item."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from . import consent
from .errors import CrowdWorkError
from .models import Assignment, CollectionRound, ConsentDecision, ImageReport, Worker, WorkItem
from .services.rounds import cancel_round, close_round, open_round
from .task_types import task_type_choices


class CollectionRoundForm(forms.ModelForm):
    task_type = forms.ChoiceField(choices=task_type_choices)

    class Meta:
        model = CollectionRound
        fields = "__all__"

    def clean_consent_text(self):
        # The same cleaning as the consent form's (annotation.consent).
        try:
            return consent.clean_consent_text(self.cleaned_data.get("consent_text", ""))
        except consent.InvalidConsentText as error:
            raise forms.ValidationError(error.message) from None


def _run_on_each(modeladmin, request, queryset, service, verb: str) -> None:
    done = 0
    for obj in queryset:
        try:
            service(obj)
            done += 1
        except CrowdWorkError as error:
            modeladmin.message_user(request, f"{obj}: {error.message}", level=messages.ERROR)
    if done:
        modeladmin.message_user(request, f"{verb} {done}.", level=messages.SUCCESS)


class WorkItemInline(admin.TabularInline):
    model = WorkItem
    extra = 0
    fields = ["position", "family", "instance", "candidate", "output_a", "output_b", "reference",
              "review_set", "is_gold", "completed_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        # Items are added on their own page, where the round's task type checks their targets.
        return False


@admin.register(CollectionRound)
class CollectionRoundAdmin(admin.ModelAdmin):
    form = CollectionRoundForm
    list_display = ["name", "task_type", "language", "status", "workers_per_item", "reward_per_task",
                    "budget_cap", "created_at"]
    list_filter = ["status", "task_type", "language"]
    search_fields = ["name"]
    readonly_fields = ["status", "opened_at", "closed_at", "created_at"]
    inlines = [WorkItemInline]
    actions = ["open_rounds", "close_rounds", "cancel_rounds"]

    @admin.action(description="Open the selected rounds")
    def open_rounds(self, request, queryset):
        _run_on_each(self, request, queryset, lambda r: open_round(round=r), "Opened")

    @admin.action(description="Close the selected rounds")
    def close_rounds(self, request, queryset):
        _run_on_each(self, request, queryset, lambda r: close_round(round=r), "Closed")

    @admin.action(description="Cancel the selected rounds")
    def cancel_rounds(self, request, queryset):
        _run_on_each(self, request, queryset, lambda r: cancel_round(round=r), "Cancelled")


@admin.register(WorkItem)
class WorkItemAdmin(admin.ModelAdmin):
    list_display = ["__str__", "round", "is_gold", "completed_at"]
    list_filter = ["round__task_type", "is_gold", ("completed_at", admin.EmptyFieldListFilter)]
    raw_id_fields = ["round", "family", "instance", "candidate", "output_a", "output_b", "reference", "review_set"]
    # Side names are derived from the targets by the pairwise type's check (WorkItem.clean), never typed.
    readonly_fields = ["side_a_name", "side_b_name", "completed_at", "aggregate_result"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["id", "round", "item", "worker", "status", "review_status", "confirmation", "gold_passed",
                    "accepted_at", "submitted_at", "duration_seconds"]
    list_filter = ["status", "review_status", "confirmation", "round__task_type", "round", "gold_passed"]
    search_fields = ["worker__external_id", "provider_assignment_id", "provider_task_id"]
    raw_id_fields = ["round", "item", "worker"]
    readonly_fields = [field.name for field in Assignment._meta.fields if field.name not in {"review_feedback"}]

    def has_add_permission(self, request):
        # Assignments come from the engine only.
        return False


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["provider", "external_id", "user", "languages", "is_blocked", "created_at"]
    list_filter = ["provider", "is_blocked"]
    search_fields = ["external_id", "user__username"]
    raw_id_fields = ["user"]


class _ReadOnlyAdmin(admin.ModelAdmin):
    """Records written by the services only; researchers read them here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ConsentDecision)
class ConsentDecisionAdmin(_ReadOnlyAdmin):
    list_display = ["round", "worker", "accepted", "decided_at"]
    list_filter = ["accepted", "round"]
    search_fields = ["worker__external_id", "round__name"]


@admin.register(ImageReport)
class ImageReportAdmin(_ReadOnlyAdmin):
    list_display = ["image_url", "item", "worker", "reported_at"]
    list_filter = ["item__round"]
    search_fields = ["image_url", "worker__external_id"]
    list_select_related = ["item__round", "worker"]
