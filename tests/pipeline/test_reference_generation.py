"""Reference candidates from captions through the fake OpenAI-compatible server and the real SDK."""
from __future__ import annotations

from decimal import Decimal

import pytest

from datasets_app.models import Caption, Instance, ReferenceCandidate, Source
from datasets_app.reference_generation import (
    MULTI_TEMPLATE,
    SINGLE_TEMPLATE,
    generate_references,
)
from fakes.openai_server import message_text
from llm.client import LLMClient
from llm.config import LLMNotConfigured
from llm.models import LLMCall, LLMRun, PromptTemplate
from llm.params import LLMRunParams
from llm.services import create_template_version
from tests.annotation.factories import make_instance

from .conftest import MODEL, PRICES

pytestmark = pytest.mark.django_db


def awaiting(images: int = 1, instruction: str | None = None) -> Instance:
    instance = make_instance(images=images, instruction=instruction)
    instance.status = Instance.Status.AWAITING_REFERENCE
    instance.save()
    return instance


def sent_prompts(server) -> list[str]:
    return [message_text(r.body["messages"][-1]["content"]) for r in server.completion_requests]


def test_single_image_prompt_has_the_papers_shape_and_the_candidate_records_its_template(fake_server, llm_client):
    instance = awaiting(instruction="Which colour is the spoon?")
    Caption.objects.filter(instance=instance).update(text="A red spoon beside green skittles.")

    report = generate_references(llm=LLMRunParams(client=llm_client))

    assert report.created == 1 and not report.failures
    expected = ("Consider an image depicted by: 'A red spoon beside green skittles.'. Now, briefly follow this "
                "instruction, and you can add a short explanation: 'Which colour is the spoon?'. Response:")
    assert sent_prompts(fake_server) == [expected]
    candidate = ReferenceCandidate.objects.get(instance=instance)
    assert candidate.text == f"You said: {expected}"
    assert candidate.prompt == expected
    assert (candidate.prompt_template, candidate.prompt_template_version) == (SINGLE_TEMPLATE, 1)
    assert candidate.model_name == MODEL and candidate.source == Source.LLM
    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_VERIFICATION
    call = LLMCall.objects.get()
    assert (call.template_name, call.template_version, call.purpose) == (SINGLE_TEMPLATE, 1, "visitbench_reference")


def test_multi_image_prompt_enumerates_the_captions_in_image_order(fake_server, llm_client):
    instance = awaiting(images=3, instruction="What changed between the pictures?")
    for position in range(3):
        Caption.objects.filter(instance=instance, position=position).update(text=f"scene {position + 1}")

    generate_references(instances=[instance], llm=LLMRunParams(client=llm_client))

    [prompt] = sent_prompts(fake_server)
    assert prompt == ("Consider images depicted by:\nImage 1: 'scene 1'\nImage 2: 'scene 2'\nImage 3: 'scene 3'\n"
                      "Now, briefly follow this instruction, and you can add a short explanation: "
                      "'What changed between the pictures?'. Response:")
    assert ReferenceCandidate.objects.get(instance=instance).prompt_template == MULTI_TEMPLATE


def test_a_template_edited_in_the_admin_is_used_and_recorded(fake_server, llm_client):
    instance = awaiting(instruction="Count the birds.")
    generate_references(instances=[], llm=LLMRunParams(client=llm_client))  # nothing to do: no template written yet
    assert not PromptTemplate.objects.exists()
    create_template_version(name=SINGLE_TEMPLATE, text="Image: {caption}\nTask: {instruction}\nAnswer:")

    generate_references(llm=LLMRunParams(client=llm_client))

    candidate = ReferenceCandidate.objects.get(instance=instance)
    assert candidate.prompt == f"Image: {instance.captions.get().text}\nTask: Count the birds.\nAnswer:"
    assert candidate.prompt_template_version == 1
    # Our shipped default did not override the researcher's text.
    assert list(PromptTemplate.objects.filter(name=SINGLE_TEMPLATE).values_list("version", flat=True)) == [1]


def test_a_429_is_retried_and_then_succeeds(fake_server, llm_client):
    instance = awaiting()
    fake_server.fail_next(1, status=429, retry_after=0)

    report = generate_references(llm=LLMRunParams(client=llm_client))

    assert report.created == 1
    assert len(fake_server.completion_requests) == 2
    assert LLMCall.objects.get(status="ok").attempts == 2
    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_VERIFICATION


def test_a_re_run_after_an_interruption_sends_no_completed_request_again(fake_server, llm_client):
    instances = [awaiting() for _ in range(6)]
    seen = []

    def interrupt(result):
        seen.append(result)
        if len(seen) == 2:
            raise KeyboardInterrupt

    client = LLMClient(base_url=fake_server.base_url, api_key="", model=MODEL, prices=PRICES, max_concurrency=1)
    with pytest.raises(KeyboardInterrupt):
        generate_references(llm=LLMRunParams(client=client, progress=interrupt))
    answered = LLMCall.objects.filter(status="ok").values_list("request", flat=True)
    answered_prompts = {message_text(request["messages"][-1]["content"]) for request in answered}
    assert len(answered_prompts) >= 2
    assert not ReferenceCandidate.objects.exists()  # nothing half-stored: candidates come after the batch
    first_pass = len(fake_server.completion_requests)

    report = generate_references(llm=LLMRunParams(client=llm_client))

    resent = sent_prompts(fake_server)[first_pass:]
    assert not answered_prompts & set(resent)
    assert report.cache_hits == len(answered_prompts)
    assert report.sent == len(instances) - len(answered_prompts) == len(resent)
    assert report.created == len(instances)


def test_the_budget_cap_stops_the_run_and_the_rest_stay_awaiting_a_reference(fake_server, llm_client):
    instances = [awaiting() for _ in range(3)]
    # One worst-case request (512 output tokens at 10 USD/1M ≈ 0.0053) fits; two do not.
    report = generate_references(llm=LLMRunParams(client=llm_client, budget_usd=Decimal("0.0055")))

    assert report.created == 1
    assert len(report.failures) == 2
    assert all(failure.reason.startswith("budget_exceeded") for failure in report.failures)
    assert report.run_status == LLMRun.Status.BUDGET_EXCEEDED
    assert len(fake_server.completion_requests) == 1
    run = LLMRun.objects.get(pk=report.run_id)
    assert 0 < run.spent_usd <= run.budget_usd
    statuses = sorted(Instance.objects.filter(pk__in=[i.pk for i in instances]).values_list("status", flat=True))
    assert statuses == ["awaiting_reference", "awaiting_reference", "awaiting_verification"]


@pytest.mark.parametrize("kind", ["invalid_json", "no_choices", "html"])
def test_a_malformed_response_is_recorded_as_a_failure_and_the_batch_goes_on(fake_server, llm_client, kind):
    first, second = awaiting(), awaiting()
    fake_server.malform_next(1, kind=kind)

    client = LLMClient(base_url=fake_server.base_url, api_key="", model=MODEL, max_concurrency=1)
    report = generate_references(llm=LLMRunParams(client=client))

    assert report.created == 1
    [failure] = report.failures
    assert failure.instance_id == first.pk and "malformed response" in failure.reason
    assert LLMCall.objects.filter(status="failed").count() == 1
    first.refresh_from_db()
    assert first.status == Instance.Status.AWAITING_REFERENCE
    # Failures are not cached: the next run asks again and succeeds.
    again = generate_references(llm=LLMRunParams(client=llm_client))
    assert again.created == 1 and again.sent == 1


def test_an_empty_answer_is_a_failure(fake_server, llm_client):
    instance = awaiting()
    fake_server.responder = lambda endpoint, body: "   "
    report = generate_references(llm=LLMRunParams(client=llm_client))
    assert report.created == 0 and report.failures[0].reason == "the model answered with no text"
    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_REFERENCE


def test_instances_not_ready_are_skipped_with_the_reason(fake_server, llm_client):
    no_caption = awaiting()
    Caption.objects.filter(instance=no_caption).update(is_current=False)
    verified = make_instance()
    verified.status = Instance.Status.VERIFIED
    verified.save()

    report = generate_references(instances=[no_caption, verified], llm=LLMRunParams(client=llm_client))

    reasons = {skipped.instance_id: skipped.reason for skipped in report.skipped}
    assert reasons == {no_caption.pk: "no current instruction-conditioned caption for every image",
                       verified.pk: "status is verified"}
    assert not fake_server.completion_requests and not LLMRun.objects.exists()


def test_without_a_server_nothing_is_written_and_the_error_names_the_settings(no_llm_settings):
    awaiting()
    with pytest.raises(LLMNotConfigured, match="LLM_BASE_URL.*OPENAI_BASE_URL"):
        generate_references()
    assert not LLMRun.objects.exists() and not PromptTemplate.objects.exists()
