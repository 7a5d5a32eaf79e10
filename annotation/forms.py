"""Forms of crowd work outside the task types: the round's study information and a worker's languages."""
from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from datasets_app.models import Language

from . import consent
from .models import CollectionRound


class ConsentTextForm(forms.ModelForm):
    """The researcher's study information and consent text of a round (the admin and the cockpit's
    round page use it; ``consent.set_consent_text`` saves it)."""

    class Meta:
        model = CollectionRound
        fields = ["consent_text"]
        widgets = {"consent_text": forms.Textarea(attrs={"rows": 12})}
        labels = {"consent_text": _("Study information and consent")}

    def clean_consent_text(self):
        try:
            return consent.clean_consent_text(self.cleaned_data.get("consent_text", ""))
        except consent.InvalidConsentText as error:
            raise ValidationError(error.message) from None

    def save(self, commit=True):
        if not commit:
            return super().save(commit=False)
        return consent.set_consent_text(round=self.instance, text=self.cleaned_data["consent_text"])


class ConsentDecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[("accept", _("I agree")), ("decline", _("I do not agree"))])

    @property
    def accepted(self) -> bool:
        return self.cleaned_data["decision"] == "accept"


class WorkerLanguagesForm(forms.Form):
    languages = forms.MultipleChoiceField(
        choices=Language.choices, widget=forms.CheckboxSelectMultiple, required=False,
        label=_("Languages I work in"),
    )
    page_language = forms.ChoiceField(
        choices=[("", _("The round's language, when I work in it"))] + list(Language.choices),
        widget=forms.RadioSelect, required=False, label=_("Show crowdbench's pages in"),
    )
