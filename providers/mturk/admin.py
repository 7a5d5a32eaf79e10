from django.contrib import admin

from .models import HIT


@admin.register(HIT)
class HITAdmin(admin.ModelAdmin):
    list_display = ["hit_id", "item", "publication", "max_assignments", "created_at"]
    readonly_fields = ["publication", "item", "hit_id", "hit_type_id", "unique_request_token", "max_assignments",
                       "created_at"]
