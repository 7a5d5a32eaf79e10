import secrets
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from demo.rounds import create_demo_rounds
from demo.data import create_demo_data
from projects.models import Membership, Project
from demo.crowd import complete_demo_rounds
from demo.llm_step import run_demo_reference_step
from evaluation.stored_results import refresh_results
from projects.services import create_project, set_member
from quality.services import recompute_round_quality

RESEARCHER = "researcher"
DEMO_PROJECT = "demo"
WORKERS = ["worker1", "worker2", "worker3"]


class Command(BaseCommand):
    help = (
        "Load the demo data (families, instances, review sets and one open round of each task "
        "type), let a simulated crowd complete the pairwise, ranking and verification rounds (and compute "
        "their worker quality), have the embedded LLM write the reference awaited when no LLM server "
        "is configured, create "
        "a researcher and local worker logins with fresh passwords, print the URLs."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")

    def handle(self, *args, host, port, **options):
        with transaction.atomic():
            researcher, workers, passwords = self._accounts()
            project = self._project(researcher)
            counts = create_demo_data(project=project)
            rounds = create_demo_rounds(researcher=researcher, worker_users=workers, project=project)
            crowd = complete_demo_rounds(rounds=rounds)
            # The cockpit's Workers page shows the stored quality of the rounds the crowd worked on.
            for key in crowd.completed_items:
                recompute_round_quality(round=rounds[key])
        # With no server configured, the embedded model writes the awaiting reference: a step run on the board.
        llm_step = run_demo_reference_step(project=project, researcher=researcher)
        # The results pages serve stored results: computed here once, the first view shows them at once.
        started = time.perf_counter()
        refresh_results(project=project)
        results_seconds = time.perf_counter() - started
        base = f"http://{host}:{port}"
        self.stdout.write(self.style.SUCCESS(
            f"Demo data: {counts['families']} families, {counts['instances']} instances, "
            f"{counts['review_sets']} review sets, {len(rounds)} rounds "
            f"({', '.join(sorted(rounds))})."
        ))
        self.stdout.write(
            f"Simulated crowd: {crowd.workers} workers submitted "
            + (", ".join(f"{n} {key}" for key, n in crowd.submitted.items()) or "nothing")
            + " tasks now; items complete: "
            + ", ".join(f"{key} {done}" for key, done in crowd.completed_items.items()) + "."
        )
        self.stdout.write(llm_step)
        self.stdout.write(f"Results (leaderboards, IRR report) computed and stored in {results_seconds:.1f} s.")
        still_open = sorted(set(rounds) - set(crowd.completed_items))
        self.stdout.write(f"Open for you to try: {', '.join(still_open)}.")
        self.stdout.write("")
        self.stdout.write(f"  Platform:         {base}/")
        self.stdout.write(f"  Researcher:       {base}/projects/{project.slug}/   login {RESEARCHER} / {passwords[RESEARCHER]}")
        self.stdout.write(f"  Django admin:     {base}/admin/   (same login)")
        for name in WORKERS:
            self.stdout.write(f"  Worker pages:     {base}/work/      login {name} / {passwords[name]}")
        self.stdout.write("")
        self.stdout.write("Passwords are new each time the demo starts.")

    @staticmethod
    def _project(researcher) -> Project:
        project = Project.objects.filter(slug=DEMO_PROJECT).first()
        if project is None:
            return create_project(
                name="Demo benchmark", slug=DEMO_PROJECT, owner=researcher,
                description="The demo families, instances, review sets and rounds.",
            )
        set_member(project=project, user=researcher, role=Membership.Role.OWNER)
        return project

    def _accounts(self):
        users = get_user_model()
        passwords = {}
        workers = []
        researcher, _ = users.objects.get_or_create(username=RESEARCHER)
        researcher.is_staff = researcher.is_superuser = True
        passwords[RESEARCHER] = secrets.token_urlsafe(9)
        researcher.set_password(passwords[RESEARCHER])
        researcher.save()
        # The group the admin adds further researchers to (collaborators must be researchers).
        researcher.groups.add(Group.objects.get_or_create(name=settings.RESEARCHER_GROUP)[0])
        for name in WORKERS:
            worker, _ = users.objects.get_or_create(username=name)
            passwords[name] = secrets.token_urlsafe(9)
            worker.set_password(passwords[name])
            worker.save()
            workers.append(worker)
        return researcher, workers, passwords
