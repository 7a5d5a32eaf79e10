from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from kernel.errors import ServiceError
from projects.services import create_project


class Command(BaseCommand):
    help = "Create a project (one benchmark-building study) with an existing user as its owner."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="short identifier used in commands and URLs, e.g. visit-2026")
        parser.add_argument("--name", help="display name (default: the slug)")
        parser.add_argument("--owner", required=True, metavar="USERNAME", help="an existing user")
        parser.add_argument("--description", default="")

    def handle(self, *args, slug, name, owner, description, **options):
        user = get_user_model().objects.filter(username=owner).first()
        if user is None:
            raise CommandError(f"--owner: no user named '{owner}'")
        try:
            project = create_project(name=name or slug, slug=slug, owner=user, description=description)
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(self.style.SUCCESS(f"Created project '{project.slug}' owned by {owner}."))
