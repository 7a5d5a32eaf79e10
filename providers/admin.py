"""Admin of publications and bonuses, and the review actions on assignments.

Approving or rejecting a submission acts at its provider too (the one review path,
``providers.review``), so those actions belong to this layer: it registers the work layer's
assignment admin again with them.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from annotation.admin import AssignmentAdmin
from annotation.models import Assignment

from .models import BonusPayment, Publication
from .review import review_submissions


@admin.register(Publication)
class PublicationAdmin(admin.ModelAdmin):
    list_display = ["round", "provider", "external_id", "status", "published_at"]
    list_filter = ["provider", "status"]
    readonly_fields = ["round", "provider", "external_id", "status", "details", "created_at", "published_at"]


@admin.register(BonusPayment)
class BonusPaymentAdmin(admin.ModelAdmin):
    """Read-only: the ledger changes only through the pay services, never by hand."""

    list_display = ["assignment", "worker", "provider", "amount", "currency", "status", "paid_at"]
    list_filter = ["provider", "status"]
    readonly_fields = [field.name for field in BonusPayment._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


admin.site.unregister(Assignment)


@admin.register(Assignment)
class ReviewedAssignmentAdmin(AssignmentAdmin):
    actions = ["approve", "reject"]

    @admin.action(description="Approve the selected submissions (at their provider too)")
    def approve(self, request, queryset):
        return _review(self, request, queryset, decision="approve", feedback_required=False)

    @admin.action(description="Reject the selected submissions (at their provider too)")
    def reject(self, request, queryset):
        return _review(self, request, queryset, decision="reject", feedback_required=True)


class ReviewFeedbackForm(forms.Form):
    # MTurk's RequesterFeedback holds at most 1,024 characters; Prolific wants 100+ for a rejection.
    feedback = forms.CharField(widget=forms.Textarea(attrs={"rows": 5, "cols": 80}), max_length=1024)


def _review(modeladmin, request, queryset, *, decision: str, feedback_required: bool):
    """Ask for the feedback to the workers on an intermediate page, then take the one review path."""
    form = ReviewFeedbackForm(request.POST if "apply" in request.POST else None)
    form.fields["feedback"].required = feedback_required
    if form.is_bound and form.is_valid():
        report = review_submissions(assignments=queryset.order_by("pk"), decision=decision,
                                    feedback=form.cleaned_data["feedback"])
        for assignment, message in report.failed:
            modeladmin.message_user(request, f"assignment {assignment.pk}: {message}", level=messages.ERROR)
        if report.done:
            verb = "Approved" if decision == "approve" else "Rejected"
            modeladmin.message_user(request, f"{verb} {len(report.done)}.", level=messages.SUCCESS)
        if report.already:
            modeladmin.message_user(request, f"{len(report.already)} already had this decision.",
                                    level=messages.INFO)
        return None
    return TemplateResponse(request, "providers/review_feedback.html", {
        **modeladmin.admin_site.each_context(request),
        "title": f"{decision.capitalize()} {queryset.count()} submission(s)",
        "opts": modeladmin.model._meta, "form": form, "decision": decision, "queryset": queryset,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    })
