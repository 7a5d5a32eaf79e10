"""Every family, review set and image in exactly one project.

Families and review sets without a project go to the project ``unassigned`` (created only when
there is such a row). An image goes to the project of the instances, seed examples and review sets
that show it; an image shown in several projects is copied, one row per project (the copies share
the stored file), and each project's links point at its own copy.
"""
from django.db import migrations

UNASSIGNED_SLUG = "unassigned"
UNASSIGNED_NAME = "Unassigned data"
UNASSIGNED_DESCRIPTION = "Data loaded without naming a project."


def assign_projects(apps, schema_editor):
    Project = apps.get_model("projects", "Project")
    InstructionFamily = apps.get_model("datasets_app", "InstructionFamily")
    ReviewSet = apps.get_model("datasets_app", "ReviewSet")
    Image = apps.get_model("datasets_app", "Image")
    InstanceImage = apps.get_model("datasets_app", "InstanceImage")
    FamilySeedImage = apps.get_model("datasets_app", "FamilySeedImage")
    unassigned = None

    def fallback():
        nonlocal unassigned
        if unassigned is None:
            unassigned, _created = Project.objects.get_or_create(
                slug=UNASSIGNED_SLUG, defaults={"name": UNASSIGNED_NAME, "description": UNASSIGNED_DESCRIPTION})
        return unassigned

    if InstructionFamily.objects.filter(project__isnull=True).exists():
        InstructionFamily.objects.filter(project__isnull=True).update(project=fallback())
    if ReviewSet.objects.filter(project__isnull=True).exists():
        ReviewSet.objects.filter(project__isnull=True).update(project=fallback())

    # (link model, the link's path to its project) for every row that shows an image
    links = [
        (InstanceImage, "instance__family__project"),
        (FamilySeedImage, "family__project"),
        (ReviewSet, "project"),
    ]
    users: dict[int, set[int]] = {}
    for model, path in links:
        for image_id, project_id in model.objects.values_list("image_id", path).distinct():
            users.setdefault(image_id, set()).add(project_id)
    for image in Image.objects.filter(project__isnull=True).order_by("pk").iterator():
        projects = sorted(users.get(image.pk, ()))
        if not projects:
            image.project = fallback()
            image.save(update_fields=["project"])
            continue
        image.project_id = projects[0]
        image.save(update_fields=["project"])
        for project_id in projects[1:]:
            original_pk = image.pk
            copy = Image.objects.get(pk=original_pk)
            copy.pk = None
            copy.project_id = project_id
            copy.save()
            for model, path in links:
                model.objects.filter(image_id=original_pk, **{path: project_id}).update(image=copy)


class Migration(migrations.Migration):

    dependencies = [
        ('datasets_app', '0004_image_project'),
        ('projects', '0001_projects_members_releases'),
    ]

    operations = [
        migrations.RunPython(assign_projects, migrations.RunPython.noop),
    ]
