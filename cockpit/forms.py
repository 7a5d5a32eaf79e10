"""Forms of the cockpit's project pages."""
from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from annotation.watch import DEFAULT_COVERAGE_TARGET
from evaluation.core import irr
from evaluation.results import MAX_BOOTSTRAP_ROUNDS, METHODS, PAGE_BOOTSTRAP_ROUNDS, SOURCES
from projects.models import RELEASE_NAME_VALIDATOR, VERSION_VALIDATOR, Membership, Project

from .errors import BadQuery


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ["name", "slug", "description"]


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.COLLABORATOR)

    def clean_username(self):
        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise forms.ValidationError(f"No active user '{username}'.")
        return user


# --- query parameters of the watch and results pages -------------------------------------------


def cleaned_query(form_class: type[forms.Form], query) -> dict:
    """The cleaned query parameters (defaults for absent ones), or a 400 naming each bad parameter."""
    form = form_class({key: query[key] for key in form_class.base_fields if key in query})
    if not form.is_valid():
        raise BadQuery("; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()))
    return {name: value if value not in (None, "") else form_class.base_fields[name].initial
            for name, value in form.cleaned_data.items()}


class WatchQuery(forms.Form):
    target = forms.IntegerField(min_value=1, max_value=100_000, required=False, initial=DEFAULT_COVERAGE_TARGET)


class LeaderboardQuery(forms.Form):
    source = forms.ChoiceField(choices=list(SOURCES.items()), required=False, initial="human")
    method = forms.ChoiceField(choices=list(METHODS.items()), required=False, initial="elo")
    bootstrap = forms.IntegerField(min_value=1, max_value=MAX_BOOTSTRAP_ROUNDS, required=False,
                                   initial=PAGE_BOOTSTRAP_ROUNDS)
    seed = forms.IntegerField(min_value=0, max_value=2**32 - 1, required=False, initial=0)


class IRRQuery(forms.Form):
    threshold = forms.FloatField(min_value=-1.0, max_value=1.0, required=False, initial=irr.DEFAULT_THRESHOLD)


class ReleaseForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[RELEASE_NAME_VALIDATOR],
                           help_text="Letters, digits, dots, dashes or underscores, e.g. visit-bench.")
    version = forms.CharField(max_length=64, initial="1.0.0", validators=[VERSION_VALIDATOR],
                              help_text="e.g. 1.0.0; a name and version are released once.")
