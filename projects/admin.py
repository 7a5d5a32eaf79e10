"""Admin for projects, their members and releases; the pseudonym secret is never shown."""
from __future__ import annotations

from django.contrib import admin

from .models import Membership, Project, Release


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug", "description"]
    prepopulated_fields = {"slug": ["name"]}
    fields = ["name", "slug", "description", "created_by"]
    raw_id_fields = ["created_by"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["role", "project"]
    raw_id_fields = ["user"]


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    list_display = ["project", "name", "version", "created_at", "directory"]
    list_filter = ["project"]
    readonly_fields = ["project", "name", "version", "directory", "files", "counts", "created_by", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False  # releases are made by make_release, which writes the files

    def has_change_permission(self, request, obj=None) -> bool:
        return False
