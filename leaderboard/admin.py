from django.contrib import admin

from .models import Submission, SubmissionPolicy, SubmissionToken


@admin.register(SubmissionPolicy)
class SubmissionPolicyAdmin(admin.ModelAdmin):
    list_display = ("project", "accepts_outside_submissions", "judge_model", "budget_usd", "updated_at")


@admin.register(SubmissionToken)
class SubmissionTokenAdmin(admin.ModelAdmin):
    list_display = ("label", "prefix", "project", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("digest", "prefix", "created_by", "created_at", "last_used_at")


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("project", "submitter_label", "file_name", "matched", "created_at", "step_run")
    readonly_fields = [field.name for field in Submission._meta.fields]
