import os

from django.core.management.base import BaseCommand, CommandError

from datasets_app.model_outputs import generate_outputs
from datasets_app.reference_generation import instances_by_id
from llm.cli import parse_budget, run_step, write_step_report
from llm.params import LLMRunParams


class Command(BaseCommand):
    help = (
        "Generate a candidate model's outputs by calling its OpenAI-compatible endpoint with each instance's "
        "image(s) and instruction (default: every verified instance without an output from that model)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True, help="the model name the endpoint serves")
        parser.add_argument("--base-url", help="the candidate's /v1 URL (default: LLM_BASE_URL)")
        parser.add_argument("--api-key-env", metavar="VAR",
                            help="environment variable holding the key for --base-url (default: no key)")
        parser.add_argument("--name", help="name the outputs are stored under (default: --model)")
        parser.add_argument("--instances", nargs="+", type=int, metavar="ID", help="only these instances")
        parser.add_argument("--budget", metavar="USD", help="stop before spending more than this many USD")

    def handle(self, *args, model, base_url, api_key_env, name, instances, budget, verbosity, **options):
        cap = parse_budget(budget)
        api_key = None
        if api_key_env:
            if not base_url:
                raise CommandError("--api-key-env goes with --base-url")
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise CommandError(f"--api-key-env: the environment variable {api_key_env} is not set")
        try:
            chosen = instances_by_id(instances) if instances else None
        except LookupError as error:
            raise CommandError(f"--instances: {error}") from None
        report = run_step(
            generate_outputs, verbosity=verbosity, llm=LLMRunParams(model=model, budget_usd=cap), base_url=base_url,
            api_key=api_key, instances=chosen, output_name=name,
        )
        write_step_report(self, report, subject=lambda failure: f"instance {failure.instance_id}",
                          failed="no output stored")
