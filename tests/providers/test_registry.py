"""One registry of providers: worker provider names come from it, and a new provider needs no migration."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Worker, validate_qualification_rules
from kernel.registry import UnknownName
from providers import services
from providers.local import LocalProvider
from providers.registry import PROVIDERS, get_provider

pytestmark = pytest.mark.django_db


class AcmeProvider(LocalProvider):
    name = "acme"
    label = "Acme crowd"


def test_worker_provider_names_come_from_the_registry():
    assert {"local", "mturk", "prolific"} <= set(PROVIDERS)
    assert not Worker._meta.get_field("provider").choices  # no database choices: no migration per provider
    with pytest.raises(ValidationError, match="Unknown crowd provider"):
        Worker(provider="acme", external_id="A1").full_clean()
    with pytest.raises(ValidationError):
        validate_qualification_rules({"providers": ["acme"]})
    with pytest.raises(UnknownName):
        services.get_or_create_provider_worker(provider="acme", external_id="A1")
    assert not Worker.objects.exists()

    with PROVIDERS.registered(AcmeProvider):  # what the one line a new provider adds does
        Worker(provider="acme", external_id="A1").full_clean()
        validate_qualification_rules({"providers": ["acme", "prolific"]})
        worker = services.get_or_create_provider_worker(provider="acme", external_id="A1")
        assert worker.provider == "acme" and isinstance(get_provider("acme"), AcmeProvider)
    assert "acme" not in PROVIDERS


@pytest.mark.parametrize("name", ["", None, "MTURK", "mturk\x00", ["mturk"]])
def test_unknown_or_malformed_provider_names_are_refused(name):
    with pytest.raises(UnknownName) as refused:
        get_provider(name)
    assert refused.value.status_code == 400
    assert refused.value.message.endswith("known: local, mturk, prolific")
