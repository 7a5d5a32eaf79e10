"""API tokens: a researcher creates and revokes their tokens for the REST API (docs/api.md).

A new token is shown once, on the answer to the POST that made it; only its digest is stored.
"""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from projects.tokens import create_token, revoke_token, tokens_for_user

from ..access import researcher_required


@researcher_required
@never_cache
@require_http_methods(["GET", "POST"])
def api_tokens(request):
    new_token = None
    if request.method == "POST":
        if "revoke" in request.POST:
            revoke_token(user=request.user, token_key=request.POST.get("revoke", "")[:50])
            messages.success(request, "Token revoked.")
            return redirect("cockpit:api-tokens")
        _record, new_token = create_token(user=request.user)
    return render(request, "cockpit/api_tokens.html",
                  {"tokens": tokens_for_user(request.user), "new_token": new_token})


urlpatterns = [
    path("api-tokens/", api_tokens, name="api-tokens"),
]
