import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from annotation.demo import create_demo_rounds
from datasets_app.demo import create_demo_data

RESEARCHER = "researcher"
WORKERS = ["worker1", "worker2", "worker3"]


class Command(BaseCommand):
    help = (
        "Load the demo data (families, instances, review sets and one open round of each task "
        "type), create a researcher and local worker logins with fresh passwords, print the URLs."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")

    def handle(self, *args, host, port, **options):
        with transaction.atomic():
            counts = create_demo_data()
            researcher, workers, passwords = self._accounts()
            rounds = create_demo_rounds(researcher=researcher, worker_users=workers)
        base = f"http://{host}:{port}"
        self.stdout.write(self.style.SUCCESS(
            f"Demo data: {counts['families']} families, {counts['instances']} instances, "
            f"{counts['review_sets']} review sets, {len(rounds)} open rounds "
            f"({', '.join(sorted(rounds))})."
        ))
        self.stdout.write("")
        self.stdout.write(f"  Platform:         {base}/")
        self.stdout.write(f"  Researcher admin: {base}/admin/   login {RESEARCHER} / {passwords[RESEARCHER]}")
        for name in WORKERS:
            self.stdout.write(f"  Worker pages:     {base}/work/      login {name} / {passwords[name]}")
        self.stdout.write("")
        self.stdout.write("Passwords are new each time the demo starts.")

    def _accounts(self):
        users = get_user_model()
        passwords = {}
        workers = []
        researcher, _ = users.objects.get_or_create(username=RESEARCHER)
        researcher.is_staff = researcher.is_superuser = True
        passwords[RESEARCHER] = secrets.token_urlsafe(9)
        researcher.set_password(passwords[RESEARCHER])
        researcher.save()
        for name in WORKERS:
            worker, _ = users.objects.get_or_create(username=name)
            passwords[name] = secrets.token_urlsafe(9)
            worker.set_password(passwords[name])
            worker.save()
            workers.append(worker)
        return researcher, workers, passwords
