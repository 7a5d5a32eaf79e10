"""API tokens: a researcher creates, names and revokes their tokens for the REST API (docs/api.md).

A new token is shown once, on the answer to the POST that made it; only its digest is stored.
"""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from kernel.errors import ServiceError
from projects.tokens import MAX_TOKEN_NAME, create_token, revoke_token, token_rows

from ..access import researcher_required


class TokenForm(forms.Form):
    name = forms.CharField(max_length=MAX_TOKEN_NAME, label="Name",
                           help_text="What the token is for, e.g. “laptop scripts” or “CI”.")


@researcher_required
@never_cache
@require_http_methods(["GET", "POST"])
def api_tokens(request):
    new_token = new_name = None
    form = TokenForm()
    status = 200
    if request.method == "POST":
        if "revoke" in request.POST:
            name = request.POST.get("revoke", "")[:MAX_TOKEN_NAME]
            revoke_token(user=request.user, name=name)
            messages.success(request, f"Token '{name}' revoked.")
            return redirect("cockpit:api-tokens")
        form = TokenForm(request.POST)
        if form.is_valid():
            try:
                record, new_token = create_token(user=request.user, name=form.cleaned_data["name"])
            except ServiceError as refused:  # a taken name, the limit: said on the form, the name kept
                form.add_error("name", refused.message)
                status = refused.status_code
            else:
                new_name, form = record.crowdbench_name.name, TokenForm()
        else:
            status = 400
    return render(request, "cockpit/api_tokens.html",
                  {"tokens": token_rows(request.user), "new_token": new_token, "new_name": new_name, "form": form},
                  status=status)


urlpatterns = [
    path("api-tokens/", api_tokens, name="api-tokens"),
]
