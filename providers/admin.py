from django.contrib import admin

from .models import BonusPayment, Publication


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
