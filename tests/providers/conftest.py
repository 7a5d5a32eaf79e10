"""Provider tests: fresh fakes per test, settings pointing at them, pairwise rounds to publish."""
from __future__ import annotations

from decimal import Decimal

import pytest

from fakes.mturk import FakeMTurkServer
from fakes.prolific import FakeProlificServer
from tests.annotation.factories import make_instance, make_outputs, make_round

PROLIFIC_TOKEN = "researcher-token"


@pytest.fixture(autouse=True)
def provider_settings(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PROVIDERS_PUBLIC_BASE_URL = "https://crowdbench.example.org"
    settings.PROVIDERS_RETRY_PAUSE_SECONDS = 0
    settings.MTURK_MAX_ATTEMPTS = 3
    settings.MTURK_ENVIRONMENT = "sandbox"
    # boto3 signs every request; the fake checks the header's form, not the key.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    return settings


@pytest.fixture
def mturk_fake(settings):
    with FakeMTurkServer(seed=3) as fake:
        settings.MTURK_ENDPOINT_URL = fake.url
        yield fake


@pytest.fixture
def prolific_fake(settings):
    with FakeProlificServer(seed=5, api_token=PROLIFIC_TOKEN, currency_code="USD") as fake:
        settings.PROLIFIC_API_URL = f"{fake.url}/api/v1/"
        settings.PROLIFIC_API_TOKEN = PROLIFIC_TOKEN
        yield fake


def pairwise_round(*, items: int = 3, workers_per_item: int = 2, reward: str = "0.50", **options):
    targets = [tuple(make_outputs(instance=make_instance())) for _ in range(items)]
    return make_round(task_type="pairwise", targets=targets, workers_per_item=workers_per_item,
                      reward_per_task=Decimal(reward), **options)


@pytest.fixture
def round_factory(db):
    return pairwise_round
