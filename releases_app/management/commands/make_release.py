from django.core.management.base import BaseCommand, CommandError

from kernel.errors import ServiceError
from projects.selectors import get_project
from releases_app.services import make_release
from stats.irr import DEFAULT_THRESHOLD


class Command(BaseCommand):
    help = (
        "Write an immutable, versioned release of a project into a new folder: verified VisIT-Bench "
        "instances (published CSV schemas, JSONL, Parquet), kept IRR items, the crowd's judgments with "
        "pseudonymous worker ids, an image manifest, a dataset card loadable with datasets.load_dataset, "
        "and SHA256SUMS. The same name and version, or an existing folder, is refused."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version names the release here and replaces Django's "print Django's version" option.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("project", metavar="PROJECT", help="project slug")
        parser.add_argument("--name", required=True, help="release name, e.g. visit-bench")
        parser.add_argument("--version", dest="release_version", default="1.0.0", metavar="V",
                            help="release version (default 1.0.0)")
        parser.add_argument("--out", required=True, metavar="DIR", help="folder to create (must not exist)")
        parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                            help=f"IRR agreement threshold for kept items (default {DEFAULT_THRESHOLD})")
        parser.add_argument("--site-base-url", default=None, metavar="URL",
                            help="base of absolute URLs of stored images (default: the SITE_BASE_URL setting)")

    def handle(self, *args, project, name, release_version, out, threshold, site_base_url, **options):
        try:
            release = make_release(
                project=get_project(slug=project), name=name, version=release_version, out_dir=out,
                threshold=threshold, site_base_url=site_base_url,
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        counts = release.counts
        self.stdout.write(self.style.SUCCESS(
            f"Release {release.name} {release.version} of '{project}' written to {release.directory}: "
            f"{counts['instances']} instances, {counts['irr_items']} IRR items, {counts['battles']} battles, "
            f"{counts['verifications']} verifications, {counts['rankings']} ranking rows, "
            f"{counts['workers']} workers, {counts['images']} images ({counts['images_excluded']} left out "
            f"because of their license)."
        ))
        reasons = counts.get("left_out_reasons") or []
        if not reasons:
            self.stdout.write("Nothing of the project was left out.")
            return
        self.stdout.write(f"Left out ({counts['left_out']}; each listed in data/left_out.jsonl):")
        for row in reasons:
            self.stdout.write(f"  {row['what']}: {row['count']} {row['why']}")
