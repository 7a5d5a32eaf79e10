"""Image licenses stored as typed ("CC BY 4.0", "cc-by-4.0", "CC0", "Public Domain Mark 1.0") become
their identifiers ("CC-BY-4.0", "CC0-1.0", "PDM-1.0"), the one vocabulary of datasets_app.licenses.
Values that spell no known license are kept as they are (releases leave their images out, saying so)."""
from django.db import migrations


def normalise(apps, schema_editor):
    from datasets_app.licenses import lookup

    Image = apps.get_model("datasets_app", "Image")
    for value in Image.objects.order_by().values_list("license", flat=True).distinct():
        identifier = lookup(value)
        if identifier is not None and identifier != value:
            Image.objects.filter(license=value).update(license=identifier)


class Migration(migrations.Migration):

    dependencies = [
        ("datasets_app", "0002_family_and_review_set_project"),
    ]

    operations = [
        migrations.RunPython(normalise, migrations.RunPython.noop),
    ]
