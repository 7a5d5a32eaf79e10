"""Queue again the step runs whose worker is gone (stale heartbeat) or whose task was lost."""
from django.core.management.base import BaseCommand

from stepruns.services import resume_stale_runs


class Command(BaseCommand):
    help = ("Queue again the step runs whose worker stopped beating for STEP_RUN_STALE_SECONDS, and queued "
            "runs no worker took that long; run it from cron or celery beat every few minutes.")

    def handle(self, *args, **options):
        run_ids = resume_stale_runs()
        self.stdout.write(f"queued again: {', '.join(map(str, run_ids)) or 'none'}")
