import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('datasets_app', '0003_normalise_image_license_spellings'),
        ('projects', '0001_projects_members_releases'),
    ]

    operations = [
        migrations.AddField(
            model_name='image',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='images', to='projects.project'),
        ),
        migrations.RemoveConstraint(
            model_name='image',
            name='image_url_unique_when_set',
        ),
    ]
