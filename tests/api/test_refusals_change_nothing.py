"""A refusal changes nothing: every refused request (API, cockpit, command) answers 4xx (or a
command error) and leaves every row of the project's data, and the files under media and
releases, exactly as they were.

One harness: each scenario prepares what it needs, the snapshot is taken, the scenario makes its
request, and the snapshot must be unchanged.
"""
from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import CollectionRound
from annotation.services.rounds import add_items, cancel_round, close_round, create_round, open_round
from tests.providers.conftest import mturk_fake, prolific_fake, provider_settings  # noqa: F401  (fixtures)

# Database behaviour (a refusal rolls back everything it began): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

# The apps holding researcher-owned data and everything the crowd and the providers did with it.
DATA_APPS = ("annotation", "datasets_app", "providers", "mturk", "projects", "leaderboard", "evaluation",
             "stepruns", "quality", "llm", "knox")


def _rows(model) -> list:
    fields = [field.attname for field in model._meta.concrete_fields]
    return [[str(value) for value in row] for row in model.objects.order_by("pk").values_list(*fields)]


def _files(root) -> list:
    if not root or not root.exists():
        return []
    return sorted([str(path.relative_to(root)), path.stat().st_size] for path in root.rglob("*") if path.is_file())


def snapshot() -> dict:
    """Row count and a digest of every row of each data model, and the files under media and releases."""
    state = {}
    for label in DATA_APPS:
        for model in apps.get_app_config(label).get_models():
            rows = _rows(model)
            digest = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
            state[model._meta.label] = (len(rows), digest)
    for name in ("MEDIA_ROOT", "RELEASES_ROOT"):
        root = getattr(settings, name, None)
        state[name] = _files(Path(root) if root else None)
    return state


def draft_round(world, **options) -> CollectionRound:
    """A draft copy of the world's round (same items' targets), in USD unless told otherwise."""
    source = world["round"]
    round = create_round(name="Refusals", task_type="pairwise", project=world["project"],
                               workers_per_item=1, reward_per_task=options.pop("reward_per_task", Decimal("0.50")),
                               **options)
    add_items(round=round, targets=[(item.output_a, item.output_b) for item in source.items.all()[:2]])
    return round


def cancelled_round(world) -> CollectionRound:
    round = draft_round(world)
    return cancel_round(round=round)


def csv_upload(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


# -- scenarios: each returns a prepared request as a callable (the snapshot is taken in between) -----


def api_publish_prolific_currency_mismatch(ctx):
    ctx["prolific_fake"].currency_code = "GBP"
    round = draft_round(ctx["world"])
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/publish/", {"provider": "prolific"}, format="json")


def api_publish_mturk_bad_reward(ctx):
    round = draft_round(ctx["world"], reward_per_task=Decimal("0.00"))
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/publish/", {"provider": "mturk"}, format="json")


def api_publish_mturk_in_a_currency_it_does_not_pay(ctx):
    round = draft_round(ctx["world"], currency="EUR")
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/publish/", {"provider": "mturk"}, format="json")


def api_publish_prolific_not_configured(ctx):
    ctx["settings"].PROLIFIC_API_TOKEN = ""
    round = draft_round(ctx["world"])
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/publish/", {"provider": "prolific"}, format="json")


def api_publish_over_budget(ctx):
    round = draft_round(ctx["world"], budget_cap=Decimal("0.10"))
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/publish/", {"provider": "local"}, format="json")


def api_publish_a_cancelled_round(ctx):
    round = cancelled_round(ctx["world"])
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/publish/", {"provider": "local"}, format="json")


def api_dry_run_refused(ctx):
    round = cancelled_round(ctx["world"])
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/publish/", {"provider": "local", "dry_run": True},
                                   format="json")


def api_close_a_draft(ctx):
    round = draft_round(ctx["world"])
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/close/")


def api_open_a_cancelled_round(ctx):
    round = cancelled_round(ctx["world"])
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/open/")


def api_open_an_open_round(ctx):
    round = ctx["world"]["round"]
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/open/")


def api_add_items_to_a_closed_round(ctx):
    round = draft_round(ctx["world"])
    open_round(round=round)
    close_round(round=round)
    item = ctx["world"]["round"].items.first()
    entry = {"output_a": item.output_a_id, "output_b": item.output_b_id}
    return lambda: ctx["api"].post(f"/api/rounds/{round.pk}/add-items/", {"items": [entry]}, format="json")


def api_release_with_a_duplicate_version(ctx):
    project = ctx["world"]["project"]
    return lambda: ctx["api"].post("/api/releases/", {"project": project.slug, "name": "study",
                                                      "version": "0.1.0"}, format="json")


def api_predictions_upload_refused(ctx):
    project = ctx["world"]["project"]
    upload = csv_upload("predictions.csv", "instruction,image,m prediction\nNo such instruction,https://x/y.jpg,hi\n")
    return lambda: ctx["api"].post("/api/model-outputs/upload/", {"project": project.slug, "file": upload},
                                   format="multipart")


def cockpit_upload_families_refused(ctx):
    project = ctx["world"]["project"]
    good = json.dumps({"name": "Brand new family", "description": "d", "multi_image": False,
                       "seed_instruction": "Count the cats.", "seed_response": "Two.",
                       "seed_image_urls": ["https://img.example.org/cats.jpg"], "license": "CC-BY-4.0"})
    upload = SimpleUploadedFile("families.jsonl", f"{good}\n{{\"name\": \"\"}}\n".encode())
    url = reverse("cockpit:board-upload", kwargs={"slug": project.slug, "what": "families"})
    return lambda: ctx["cockpit"].post(url, {"families-file": upload})


def cockpit_upload_review_sets_refused(ctx):
    project = ctx["world"]["project"]
    header = "item_id,language,category,image_url,license,creator,source_url,review_1,review_2,review_3,review_4,review_5"
    good = "new-1,en,food,https://img.example.org/a.jpg,CC0-1.0,me,https://example.org,a,b,c,d,e"
    bad = "new-2,xx,food,https://img.example.org/b.jpg,CC0-1.0,me,https://example.org,a,b,c,d,e"
    upload = csv_upload("reviews.csv", f"{header}\n{good}\n{bad}\n")
    url = reverse("cockpit:board-upload", kwargs={"slug": project.slug, "what": "review-sets"})
    return lambda: ctx["cockpit"].post(url, {"review-sets-file": upload})


def cockpit_upload_predictions_refused(ctx):
    project = ctx["world"]["project"]
    upload = csv_upload("predictions.csv", "no,columns,here\n1,2,3\n")
    url = reverse("cockpit:board-upload", kwargs={"slug": project.slug, "what": "predictions"})
    return lambda: ctx["cockpit"].post(url, {"predictions-file": upload})


def cockpit_close_a_draft(ctx):
    project, round = ctx["world"]["project"], draft_round(ctx["world"])
    url = reverse("cockpit:round-close", kwargs={"slug": project.slug, "round_id": round.pk})
    return lambda: ctx["cockpit"].post(url)


def cockpit_open_a_cancelled_round(ctx):
    project, round = ctx["world"]["project"], cancelled_round(ctx["world"])
    url = reverse("cockpit:round-open", kwargs={"slug": project.slug, "round_id": round.pk})
    return lambda: ctx["cockpit"].post(url)


def cockpit_extend_to_a_shorter_time_limit(ctx):
    project, round = ctx["world"]["project"], ctx["world"]["round"]
    url = reverse("cockpit:round-extend", kwargs={"slug": project.slug, "round_id": round.pk})
    return lambda: ctx["cockpit"].post(url, {"time_limit_seconds": 60})


def cockpit_extend_with_a_longer_time_limit_and_a_lower_budget_cap(ctx):
    """The longer time limit moves the deadlines of work in flight before the cap is refused: rolled back."""
    project, round = ctx["world"]["project"], ctx["world"]["round"]
    round.budget_cap = Decimal("100.00")
    round.save(update_fields=["budget_cap"])
    url = reverse("cockpit:round-extend", kwargs={"slug": project.slug, "round_id": round.pk})
    return lambda: ctx["cockpit"].post(url, {"time_limit_seconds": 7200, "budget_cap": "50.00"})


def cockpit_api_token_over_the_limit(ctx):
    """An expired token is cleared only when a new one is made, not by a refused request."""
    from datetime import timedelta

    from django.utils import timezone
    from knox.models import AuthToken

    user = ctx["researcher"]
    for _ in range(settings.REST_KNOX["TOKEN_LIMIT_PER_USER"] - AuthToken.objects.filter(user=user).count()):
        AuthToken.objects.create(user=user)
    expired, _token = AuthToken.objects.create(user=user)
    AuthToken.objects.filter(pk=expired.pk).update(expiry=timezone.now() - timedelta(days=1))
    return lambda: ctx["cockpit"].post(reverse("cockpit:api-tokens"))


def cockpit_publish_without_a_dry_run(ctx):
    project, round = ctx["world"]["project"], draft_round(ctx["world"])
    url = reverse("cockpit:round-publish", kwargs={"slug": project.slug, "round_id": round.pk})
    return lambda: ctx["cockpit"].post(url, {"provider": "prolific", "expected_seconds": 60, "dry_run": "forged",
                                             "confirm": "on"})


def cockpit_publish_prolific_currency_mismatch(ctx):
    from cockpit.views.rounds import _dry_run_token

    ctx["prolific_fake"].currency_code = "GBP"
    project, round = ctx["world"]["project"], draft_round(ctx["world"])
    url = reverse("cockpit:round-publish", kwargs={"slug": project.slug, "round_id": round.pk})
    token = _dry_run_token(round, "prolific")
    return lambda: ctx["cockpit"].post(url, {"provider": "prolific", "expected_seconds": 60, "dry_run": token,
                                             "confirm": "on"})


def command_publish_prolific_currency_mismatch(ctx):
    ctx["prolific_fake"].currency_code = "GBP"
    round = draft_round(ctx["world"])
    return lambda: call_command("publish_round", str(round.pk), "--provider", "prolific", stdout=StringIO())


def command_release_with_a_duplicate_version(ctx):
    project = ctx["world"]["project"]
    out = ctx["tmp_path"] / "again"
    return lambda: call_command("make_release", project.slug, "--name", "study", "--version", "0.1.0",
                                "--out", str(out), stdout=StringIO())


SCENARIOS = [
    api_publish_prolific_currency_mismatch,
    api_publish_mturk_bad_reward,
    api_publish_mturk_in_a_currency_it_does_not_pay,
    api_publish_prolific_not_configured,
    api_publish_over_budget,
    api_publish_a_cancelled_round,
    api_dry_run_refused,
    api_close_a_draft,
    api_open_a_cancelled_round,
    api_open_an_open_round,
    api_add_items_to_a_closed_round,
    api_release_with_a_duplicate_version,
    api_predictions_upload_refused,
    cockpit_upload_families_refused,
    cockpit_upload_review_sets_refused,
    cockpit_upload_predictions_refused,
    cockpit_close_a_draft,
    cockpit_open_a_cancelled_round,
    cockpit_extend_to_a_shorter_time_limit,
    cockpit_extend_with_a_longer_time_limit_and_a_lower_budget_cap,
    cockpit_api_token_over_the_limit,
    cockpit_publish_without_a_dry_run,
    cockpit_publish_prolific_currency_mismatch,
    command_publish_prolific_currency_mismatch,
    command_release_with_a_duplicate_version,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.__name__ for scenario in SCENARIOS])
def test_a_refusal_changes_nothing(scenario, world, owner_api, client, researcher, settings, tmp_path,
                                   prolific_fake, mturk_fake):
    client.force_login(researcher)
    ctx = {"world": world, "api": owner_api, "cockpit": client, "researcher": researcher, "settings": settings,
           "tmp_path": tmp_path,
           "prolific_fake": prolific_fake, "mturk_fake": mturk_fake}
    request = scenario(ctx)
    before = snapshot()
    if scenario.__name__.startswith("command_"):
        with pytest.raises(CommandError):
            request()
    else:
        response = request()
        assert 400 <= response.status_code < 500, (response.status_code, getattr(response, "content", b"")[:300])
    after = snapshot()
    changed = {name: (before[name], after[name]) for name in before if before[name] != after[name]}
    assert not changed, f"the refused request changed: {sorted(changed)}"
