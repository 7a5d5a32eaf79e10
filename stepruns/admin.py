from django.contrib import admin

from .models import StepRun


@admin.register(StepRun)
class StepRunAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "kind", "model", "status", "done", "total", "cost_usd", "created_at")
    list_filter = ("status", "kind")
    readonly_fields = [field.name for field in StepRun._meta.fields]

    def has_add_permission(self, request):
        return False
