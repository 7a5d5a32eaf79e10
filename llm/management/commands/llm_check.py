"""Show the LLM settings in effect (never the key) and ask the server which models it serves."""
from __future__ import annotations

import openai
from django.core.management.base import BaseCommand, CommandError

from llm import embedded
from llm.cli import not_configured
from llm.config import LLMConfig, LLMNotConfigured


class Command(BaseCommand):
    help = "Check that the configured OpenAI-compatible server answers (GET /v1/models)."

    def handle(self, *args, **options):
        try:
            config = LLMConfig.from_settings()
        except LLMNotConfigured as error:
            raise not_configured(error) from None
        if config.embedded:
            self.stdout.write(f"embedded model {config.model} ({embedded.EMBEDDED_DESCRIPTION}); "
                              "set LLM_BASE_URL or LLM_API_KEY to use a server instead")
        self.stdout.write(f"base URL      {config.base_url or '(OpenAI default: https://api.openai.com/v1)'}")
        self.stdout.write(f"API key       {'set' if config.api_key else 'not set'}")
        self.stdout.write(f"default model {config.model or '(not set: LLM_MODEL)'}")
        self.stdout.write(f"priced models {', '.join(sorted(config.prices)) or '(none: LLM_PRICES)'}")
        self.stdout.write(f"concurrency {config.max_concurrency}, retries {config.max_retries}, timeout {config.timeout}s")
        try:
            config.require_server()
        except LLMNotConfigured as error:
            raise not_configured(error) from None
        sdk = openai.OpenAI(
            base_url=config.base_url or None,
            # Keyless servers: the callable stops the SDK from reading OPENAI_API_KEY on its own.
            api_key=config.api_key or (lambda: ""),
            timeout=min(config.timeout, 30),
            max_retries=0,
            http_client=embedded.http_client(config.embedded_serving) if config.embedded else None,
        )
        headers = {} if config.api_key else {"Authorization": openai.omit}
        try:
            models = [model.id for model in sdk.models.list(extra_headers=headers)]
        except openai.OpenAIError as exc:
            raise CommandError(f"the server did not answer: {exc}") from exc
        self.stdout.write(self.style.SUCCESS(f"server answers; models: {', '.join(models) or '(none listed)'}"))
        if config.model and models and config.model not in models:
            self.stdout.write(self.style.WARNING(f"LLM_MODEL {config.model!r} is not among them"))
