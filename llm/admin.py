from django.contrib import admin, messages

from .models import LLMCall, LLMRun, PromptTemplate
from .services import create_template_version


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "created_at"]
    list_filter = ["name"]
    search_fields = ["name", "text", "description"]
    readonly_fields = ["version", "created_at"]

    def get_readonly_fields(self, request, obj=None):
        # A stored version is what past calls were made with: its name cannot move.
        return [*self.readonly_fields, "name"] if obj is not None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if not change:
            created = create_template_version(name=obj.name, text=obj.text, description=obj.description)
            obj.pk, obj.version, obj.created_at = created.pk, created.version, created.created_at
            return
        if "text" not in form.changed_data:
            super().save_model(request, obj, form, change)  # description only: same prompt
            return
        created = create_template_version(name=obj.name, text=obj.text, description=obj.description)
        obj.pk, obj.version, obj.created_at = created.pk, created.version, created.created_at
        messages.info(request, f"Saved as {created}; earlier versions are kept unchanged.")


@admin.register(LLMRun)
class LLMRunAdmin(admin.ModelAdmin):
    list_display = ["name", "purpose", "status", "budget_usd", "spent_usd", "created_at", "finished_at"]
    list_filter = ["status", "purpose"]
    search_fields = ["name", "purpose"]
    readonly_fields = ["spent_usd", "status", "created_at", "finished_at"]


@admin.register(LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    list_display = [
        "id", "created_at", "purpose", "model", "status", "prompt_tokens", "completion_tokens", "cost_usd",
        "latency_seconds", "attempts", "template_name", "template_version",
    ]
    list_filter = ["status", "endpoint", "model", "purpose", "template_name", "run"]
    search_fields = ["request_hash", "purpose", "template_name", "response_text", "error"]
    date_hierarchy = "created_at"
    list_select_related = ["run"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # a record of what was sent and paid for: view only

    def has_delete_permission(self, request, obj=None):
        return False
