"""Cockpit pages, one module per area; each module owns its ``urlpatterns``."""
