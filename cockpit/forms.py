"""Forms of the cockpit's project pages."""
from __future__ import annotations

from decimal import Decimal

from django import forms
from django.contrib.auth import get_user_model

from llm.config import configured_models
from projects.models import Membership, Project


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


class RunForm(forms.Form):
    """What every background step run asks for: the model (among the configured ones) and a budget."""

    model = forms.ChoiceField(choices=())
    budget_usd = forms.DecimalField(label="Budget (USD)", min_value=Decimal("0.000001"), max_digits=12,
                                    decimal_places=6, initial=Decimal("1.00"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = [(name, name) for name in configured_models()]


class UploadForm(forms.Form):
    file = forms.FileField()
