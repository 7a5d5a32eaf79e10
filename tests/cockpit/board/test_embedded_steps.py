"""Every LLM step kind of the board runs to the end on the embedded model (SmolLM2-135M, no server
configured), through the same LLM layer and the real openai client as a configured server."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from datasets_app.models import Instance, ModelOutput, ReferenceCandidate
from llm import embedded
from llm.models import LLMCall
from stepruns.models import StepRun

from ..conftest import PASSWORD
from .conftest import judged_instance, project_instance

pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("smollm2")]
S = Instance.Status
MODEL = embedded.EMBEDDED_MODEL


@pytest.fixture(autouse=True)
def nothing_configured(settings):
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_PRICES = {}
    settings.LLM_EMBEDDED = True
    settings.LLM_EMBEDDED_MAX_TOKENS = 16  # short answers keep the CPU time down
    return settings


@pytest.fixture
def owner_client(client, researcher):
    client.login(username=researcher.username, password=PASSWORD)
    return client


def run_step(client, project, kind, capture, **fields):
    data = {f"{kind}-run-model": MODEL, f"{kind}-run-budget_usd": "1.00"}
    data.update({f"{kind}-{key}": value for key, value in fields.items()})
    with capture(execute=True):
        response = client.post(reverse("cockpit:start-step", args=[project.slug, kind]), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    run = StepRun.objects.latest("pk")
    assert run.status == StepRun.Status.SUCCEEDED, (run.summary, run.failures)
    assert run.model == MODEL and run.cost_usd == Decimal(0)
    return run


def test_references_are_written_by_the_embedded_model(owner_client, project, django_capture_on_commit_callbacks):
    awaiting = [project_instance(project, status=S.AWAITING_REFERENCE) for _ in range(2)]
    run = run_step(owner_client, project, "generate_references", django_capture_on_commit_callbacks)
    candidates = ReferenceCandidate.objects.filter(instance__in=awaiting)
    assert candidates.count() == 2 and all(candidate.text.strip() for candidate in candidates)
    assert set(Instance.objects.filter(pk__in=[i.pk for i in awaiting]).values_list("status", flat=True)) == {
        S.AWAITING_VERIFICATION}
    assert set(LLMCall.objects.filter(run_id=run.llm_run_id).values_list("model", flat=True)) == {MODEL}


def test_model_outputs_are_written_by_the_embedded_model(owner_client, project, django_capture_on_commit_callbacks):
    verified = project_instance(project, status=S.VERIFIED)
    run_step(owner_client, project, "generate_outputs", django_capture_on_commit_callbacks, output_name="smol")
    output = ModelOutput.objects.get(instance=verified, model_name="smol")
    assert output.text.strip()


def test_the_judge_runs_on_the_embedded_model(owner_client, project, django_capture_on_commit_callbacks):
    judged_instance(project, models=("model-x", "model-y"))
    run = run_step(owner_client, project, "judge_outputs", django_capture_on_commit_callbacks,
                   models=["model-x", "model-y"], reference="against")
    assert "battles" in run.summary or run.result, run.summary
    from evaluation.models import JudgedBattle

    assert JudgedBattle.objects.filter(judge_model=MODEL).exists()


def test_irr_review_generation_and_chat_ranking_run_to_the_end(owner_client, project, django_capture_on_commit_callbacks):
    """The IRR steps ask for a strict format (JSON reviews, a ranking); a 135M model rarely writes it.
    The runs still finish: each unusable answer is followed up once, then recorded as a failure and
    left out of the cache, as for any server (llm.structured)."""
    from tests.annotation.factories import make_review_set

    make_review_set(language="en", stored_images=True, project=project)
    generation = run_step(owner_client, project, "generate_reviews", django_capture_on_commit_callbacks,
                          languages=["en"])
    ranking = run_step(owner_client, project, "rank_reviews", django_capture_on_commit_callbacks,
                       ranker="chat", language="")
    for run in (generation, ranking):
        assert run.done == run.total > 0
        assert LLMCall.objects.filter(run_id=run.llm_run_id, model=MODEL).exists()


@pytest.mark.django_db(transaction=True)  # the loader's own commit carries the run out, as in `make demo`
def test_the_demo_loader_has_the_embedded_model_write_the_awaited_reference(client):
    """`make demo` with nothing configured: its board shows an LLM step run from start to end."""
    import re
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("load_demo", stdout=out)
    text = out.getvalue()
    run = StepRun.objects.get(kind="generate_references")
    assert run.status == StepRun.Status.SUCCEEDED and run.model == MODEL, (run.summary, run.failures)
    assert f"run {run.pk}: succeeded" in text and "for trying the pipeline, not for results" in text
    candidate = ReferenceCandidate.objects.get(instance__status=S.AWAITING_VERIFICATION, model_name=MODEL)
    assert candidate.text.strip() and candidate.instance.family.project == run.project

    login = dict(re.findall(r"login (\w+) / (\S+)", text))
    assert client.login(username="researcher", password=login["researcher"])
    board = client.get(reverse("cockpit:project", args=[run.project.slug])).content.decode()
    assert "Generate references" in board and "succeeded" in board, board[:3000]
