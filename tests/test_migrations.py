import io

import pytest
from django.core.management import call_command

# Database behaviour (migrations): also run on PostgreSQL.
pytestmark = pytest.mark.database_sensitive


@pytest.mark.django_db
def test_models_and_migrations_agree():
    out = io.StringIO()
    # Exits non-zero (SystemExit) when a model change has no migration.
    call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)


@pytest.mark.django_db(transaction=True)
def test_the_project_migration_puts_every_family_review_set_and_image_in_one_project():
    """Rows from before every row had a project: families and review sets without one go to the
    project ``unassigned``; an image shown in two projects becomes one row per project."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("datasets_app", "0002_family_and_review_set_project")]
    after = [("datasets_app", "0006_project_required_and_names_unique_per_project")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    Project = old.get_model("projects", "Project")
    Family, Image = old.get_model("datasets_app", "InstructionFamily"), old.get_model("datasets_app", "Image")
    Instance, InstanceImage = old.get_model("datasets_app", "Instance"), old.get_model("datasets_app", "InstanceImage")
    FamilySeedImage, ReviewSet = old.get_model("datasets_app", "FamilySeedImage"), old.get_model("datasets_app", "ReviewSet")
    one, two = Project.objects.create(name="One", slug="one"), Project.objects.create(name="Two", slug="two")
    shared = Image.objects.create(url="https://images.example.org/shared.png", license="CC-BY-4.0")
    alone = Image.objects.create(url="https://images.example.org/alone.png")
    unused = Image.objects.create(url="https://images.example.org/unused.png")
    families = [Family.objects.create(name=name, project=project)
                for name, project in (("A", one), ("B", two), ("C", None))]
    for n, family in enumerate(families):
        instance = Instance.objects.create(family=family, instruction=f"Question {n}?", content_key=f"key-{n}")
        InstanceImage.objects.create(instance=instance, image=shared, position=0)
    FamilySeedImage.objects.create(family=families[1], image=alone, position=0)
    ReviewSet.objects.create(external_id="r1", language="en", image=shared, project=two)
    ReviewSet.objects.create(external_id="r2", language="en", image=alone, project=None)

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    Project, Image = new.get_model("projects", "Project"), new.get_model("datasets_app", "Image")
    Family, InstanceImage = new.get_model("datasets_app", "InstructionFamily"), new.get_model("datasets_app", "InstanceImage")
    FamilySeedImage, ReviewSet = new.get_model("datasets_app", "FamilySeedImage"), new.get_model("datasets_app", "ReviewSet")
    unassigned = Project.objects.get(slug="unassigned")
    assert Family.objects.get(name="C").project_id == unassigned.pk
    assert ReviewSet.objects.get(external_id="r2").project_id == unassigned.pk
    # The shared image: the first project keeps the row, the others get a copy each.
    copies = Image.objects.filter(url=shared.url).order_by("pk")
    assert [image.project_id for image in copies] == [one.pk, two.pk, unassigned.pk]
    assert copies[0].pk == shared.pk and {image.license for image in copies} == {"CC-BY-4.0"}
    for link in InstanceImage.objects.select_related("image", "instance__family"):
        assert link.image.project_id == link.instance.family.project_id
    assert ReviewSet.objects.get(external_id="r1").image.project_id == two.pk
    # An image of two projects' rows (a seed example of Two, a review set now of Unassigned).
    assert FamilySeedImage.objects.get().image.project_id == two.pk
    assert ReviewSet.objects.get(external_id="r2").image.project_id == unassigned.pk
    assert Image.objects.get(pk=unused.pk).project_id == unassigned.pk
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
